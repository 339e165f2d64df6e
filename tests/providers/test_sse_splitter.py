"""The byte-level SSE splitter of the upstream client, against the WHATWG rules."""

import pytest

from providers.upstream import SSESplitter


def split(*reads: bytes) -> list[bytes]:
    splitter = SSESplitter()
    events = []
    for read in reads:
        events.extend(splitter.feed(read))
    return events


def test_one_liners_in_one_read():
    assert split(b'data: {"a":1}\n\ndata: [DONE]\n\n') == [b'{"a":1}', b"[DONE]"]


@pytest.mark.parametrize("cut", range(1, 12))
def test_an_event_split_anywhere_across_reads(cut):
    raw = b'data: {"a":1}\n\ndata: x\n\n'
    assert split(raw[:cut], raw[cut:]) == [b'{"a":1}', b"x"]


def test_crlf_and_cr_line_ends_even_split_between_reads():
    # A trailing CR may be the first half of a CRLF: the event ends with the next read.
    assert split(b"data: a\r", b"\n\r\ndata: b\r\r") == [b"a"]
    assert split(b"data: a\r", b"\n\r\ndata: b\r\r", b"data: c\n\n") == [b"a", b"b", b"c"]


def test_comments_other_fields_and_events_without_data_are_skipped():
    raw = b": PROCESSING\n\nevent: ping\nid: 3\n\nretry: 10\ndata: kept\n\n"
    assert split(raw) == [b"kept"]


def test_multi_line_data_is_joined_with_lf_and_no_space_after_colon_is_fine():
    assert split(b"data: line1\ndata:line2\n\n") == [b"line1\nline2"]


def test_an_unfinished_event_at_the_end_is_dropped():
    assert split(b"data: done\n\ndata: half") == [b"done"]


@pytest.mark.parametrize(
    ("reads", "expected"),
    [
        # One whole one-line event per read (a paced stream): the fast path.
        ((b'data: {"a":1}\n\n', b"data: \n\n", b"data: [DONE]\n\n"), [b'{"a":1}', b"", b"[DONE]"]),
        # A read that looks like one whole event but completes what came before it.
        ((b"data: e", b"data: f\n\n"), [b"edata: f"]),
        ((b"data: g\r", b"data: h\n\n"), [b"g\nh"]),
        # Whole events that are not one line, or end in CRLF: the general rules.
        ((b"data: b\ndata: c\n\n", b"data: d\r\n\r\n"), [b"b\nc", b"d"]),
        ((b"data: x\n\ndata: y\n\n",), [b"x", b"y"]),
    ],
)
def test_a_read_of_one_whole_event_gives_what_the_general_rules_give(reads, expected):
    assert split(*reads) == expected
    assert split(b"".join(reads)) == expected
