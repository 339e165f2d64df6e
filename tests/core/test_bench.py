from lab.core_bench import build_model, time_decisions


def test_bench_model_has_twenty_endpoints_with_stats():
    model, endpoints, speed = build_model()
    assert model.slug == "deepseek/deepseek-v4.1-flash"
    assert len(endpoints) == 20
    assert all(speed.count(e.endpoint_id, "32k-128k") == 30 for e in endpoints)


def test_bench_times_decisions():
    timings = time_decisions(decisions=200)
    assert len(timings) == 200
    assert all(t > 0 for t in timings)
