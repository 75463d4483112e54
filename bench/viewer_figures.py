"""What the web viewer costs: server time and browser load time of its pages, and
the server's memory while paging a long session (docs/viewer.md#figures).

A store of ``--sessions`` one-turn sessions, one session of 1,000 events and one
of ``--big`` events (a scripted agent: five streamed steps per turn), served by
``agentlog serve`` in a subprocess. Server time: the median of ``--repeat`` GETs
(urllib, on this machine). Browser load time: Chromium's navigation timing
(``loadEventEnd``), median of 3. RSS: the server's ``VmRSS`` before and after
paging the long session's timeline 50 times. No assertion on time.

    python -m bench.viewer_figures --backend sqlite
    python -m bench.viewer_figures --backend postgres
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.domain.session import make_header
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from bench.base import bench_store, versions
from tests.builders import TE, TS, U, store_directly

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def many(app: Any, count: int) -> None:
    def sessions() -> Any:
        for number in range(count):
            session_id = f"s{number:06d}"
            items = [
                TS(1),
                U(f"needle prompt {number} about topic{number % 97}"),
                TE(1),
            ]
            seed = [item.envelope(seq, 1000 + number) for seq, item in enumerate(items)]
            cwd = f"/ws/{number % 20}"
            yield (
                session_id,
                make_header(session_id, created_at=1000 + number, cwd=cwd),
                seed,
            )

    store_directly(app, sessions())


def scripted(app: Any, session_id: str, events: int) -> None:
    handle = app.create_session(session_id=session_id, cwd="/ws/long")
    agent = ScriptedAgent(handle)
    turn = 0
    while handle.seq < events - 40:
        agent.start_turn(f"prompt {turn} of {session_id}")
        for _ in range(5):
            agent.model_step(text=f"answer {turn} " * 3)
            agent.end_step()
        agent.end_turn()
        turn += 1
        if turn % 50 == 0:
            app.flush(handle)
    app.flush(handle)


def store_url(backend: str, where: Path | str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{where}"
    from tests.conftest import PG_URL

    return f"{PG_URL}?schema={where}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def median_ms(url: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as response:
            response.read()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def browser_ms(pages: list[str]) -> dict[str, float]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    found: dict[str, float] = {}
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        tab = chromium.new_page()
        for url in pages:
            times = []
            for _ in range(3):
                tab.goto(url)
                times.append(
                    tab.evaluate(
                        "() => { const t = performance.getEntriesByType('navigation')[0];"
                        " return t.loadEventEnd - t.startTime; }"
                    )
                )
            found[url] = statistics.median(times)
        chromium.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(
        f"# viewer figures: {args.backend}, {args.sessions:,} sessions + 1,000 and "
        f"{args.big:,}-event sessions, median of {args.repeat}"
    )
    print(versions())
    with bench_store(args.backend) as (app, where):
        many(app, args.sessions)
        scripted(app, "small", 1_000)
        scripted(app, "big", args.big)
        views_of(app).catch_up()
        index = search_index_of(app)
        if index is not None:
            index.catch_up()
        port = free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentlog",
                "serve",
                "--port",
                str(port),
                "--store",
                store_url(args.backend, where),
            ],
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.5).close()
                    break
                except OSError:
                    time.sleep(0.2)
            with urllib.request.urlopen(base + "/", timeout=300) as first:
                cursor_page = first.read()
            deep = base + "/?cursor=" + _cursor_after(app, 5_000)
            pages = {
                "listing, first page": base + "/",
                "listing, page after 5,000 rows": deep,
                "session of 1,000 events": base + "/s/small",
                f"session of {args.big:,} events": base + "/s/big",
                f"{args.big:,}-event session, timeline at the middle": base
                + f"/s/big?t={args.big // 2}",
                "search page (a word in every session)": base + "/search?q=needle",
                "search page (a rare word)": base + "/search?q=topic42",
                "step view at the end of the 1,000": base + "/s/small/step/990",
            }
            del cursor_page
            for name, url in pages.items():
                median_ms(url, 1)  # warm
                print(f"| {name} | server {median_ms(url, args.repeat):.1f} ms |")
            before = rss_mb(server.pid)
            for number in range(50):
                median_ms(base + f"/s/big?t={number * (args.big // 50)}", 1)
            after = rss_mb(server.pid)
            print(
                f"| server RSS paging the long session 50 times | {before:.0f} -> {after:.0f} MB |"
            )
            for url, ms in browser_ms(list(pages.values())).items():
                name = next(k for k, v in pages.items() if v == url)
                print(f"| {name} | browser load {ms:.0f} ms |")
        finally:
            server.terminate()
            server.wait(timeout=30)


def _cursor_after(app: Any, rows: int) -> str:
    from agentlog import SessionQuery

    page = SessionQuery(app).list_summaries(rows)
    return page.next_cursor or ""


if __name__ == "__main__":
    main()
