"""``python -m lab.emulator --profiles FILE [--host] [--port] [--seed] [--time-scale]``."""

from __future__ import annotations

import argparse

import uvicorn

from .app import create_app


def main(argv: list[str] | None = None) -> None:
    """Parse arguments and serve the emulator under uvicorn until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m lab.emulator", description="Simulated OpenAI-compatible providers."
    )
    parser.add_argument("--profiles", required=True, help="profile JSON file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--seed", type=int, default=None, help="override the file's seed")
    parser.add_argument(
        "--time-scale", type=float, default=None, help="override the file's time_scale"
    )
    args = parser.parse_args(argv)
    app = create_app(args.profiles, seed=args.seed, time_scale=args.time_scale)
    uvicorn.run(
        app, host=args.host, port=args.port, log_level="warning", access_log=False, lifespan="off"
    )


if __name__ == "__main__":
    main()
