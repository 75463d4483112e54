"""One benchmark job in its own process: ``python -m bench.worker JOB``.

Every cold read runs in a fresh interpreter, so no system can serve it from
memory; the timer starts after imports and workload generation, and covers
opening the store plus the operation. The job is a JSON file; the result is
written as JSON to ``job["out"]`` (stdout is left to the libraries).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import BenchSystem, SessionRef, digest, store_bytes
from .workload import Conversation, build, next_turns

if TYPE_CHECKING:
    from collections.abc import Callable

MODULES = {
    "floor": "floor_sqlite",
    "raw_eventsourcing": "raw_eventsourcing",
    "agentlog": "agentlog_system",
    "openai_agents": "peer_openai",
    "langgraph": "peer_langgraph",
}


BEFORE = "before"
"""agentlog at another checkout (``run --before CHECKOUT``), with that checkout's
own adapter: its modules first on ``sys.path``, its bench package loaded by path."""
BEFORE_PACKAGE = "before_bench"
BEFORE_LAYOUTS = ("bench", "tests/benchmarks")  # the suite's home now, and before


def system_class(name: str, checkout: str | None = None) -> type[BenchSystem]:
    """Import an adapter module only when its system is asked for."""
    if name == BEFORE:
        return _before_class(Path(str(checkout)))
    module = importlib.import_module(f"{__package__}.{MODULES[name]}")
    cls: type[BenchSystem] = module.System
    return cls


def _before_class(checkout: Path) -> type[BenchSystem]:
    """The checkout's agentlog adapter, importing the checkout's agentlog.

    The workload and the adapter protocol are the same at both (the digests in
    the report's problems check that both derive the same histories).
    """
    folder = next(
        (
            checkout / layout
            for layout in BEFORE_LAYOUTS
            if (checkout / layout).is_dir()
        ),
        None,
    )
    if folder is None:
        msg = f"no benchmark package in {checkout} ({', '.join(BEFORE_LAYOUTS)})"
        raise FileNotFoundError(msg)
    sys.path.insert(0, str(checkout))
    spec = importlib.util.spec_from_file_location(
        BEFORE_PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        msg = f"cannot load {folder}"
        raise ImportError(msg)
    package = importlib.util.module_from_spec(spec)
    sys.modules[BEFORE_PACKAGE] = package
    spec.loader.exec_module(package)
    module = importlib.import_module(f"{BEFORE_PACKAGE}.{MODULES['agentlog']}")
    cls: type[BenchSystem] = module.System
    return cls


def conversation(spec: dict[str, Any]) -> Conversation:
    """Regenerate a fixture's conversation from its spec (deterministic)."""
    return build(
        spec["session_id"],
        messages=spec.get("messages"),
        events=spec.get("events"),
        chunks=spec.get("chunks", True),
        title=spec.get("title", False),
        seed=spec.get("seed", 0),
    )


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = action()
    return time.perf_counter() - start, value


def _rm(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def probe(cls: type[BenchSystem], job: dict[str, Any]) -> dict[str, Any]:
    """Can this system run here, and which versions are installed?"""
    reason = cls.unavailable_reason()
    checkout = job.get("checkout")
    return {
        "available": reason is None,
        "reason": reason,
        "versions": cls.versions() if reason is None else {},
        "label": f"{cls.label} before" if checkout else cls.label,
        "checkout": checkout,
        "features": sorted(cls.features),
        "quadratic_writes": bool(getattr(cls, "quadratic_writes", False)),
    }


def write_run(
    cls: type[BenchSystem], db: Path, spec: dict[str, Any], flush: str
) -> dict[str, Any]:
    """Write one conversation into a fresh file; time it; size the file."""
    conv = conversation(spec)
    _rm(db)
    system = cls(db)
    seconds, _ = _timed(lambda: system.write(conv, flush))  # type: ignore[arg-type]
    system.close()
    size = store_bytes(db)
    return {
        "seconds": seconds,
        "messages": conv.n_messages,
        "events": conv.n_events,
        "bytes": size,
    }


def w1(cls: type[BenchSystem], job: dict[str, Any]) -> dict[str, Any]:
    """W1: an in-process warm-up at a tenth of the size, then the measured run."""
    db = Path(job["db"])
    args = job["args"]
    result: dict[str, Any] = {}
    if args.get("warmup_messages"):
        warm_spec = {**args["spec"], "messages": args["warmup_messages"]}
        warm = write_run(cls, Path(f"{db}.warm"), warm_spec, args["flush"])
        result["warmup"] = warm
        _rm(Path(f"{db}.warm"))
    result.update(write_run(cls, db, args["spec"], args["flush"]))
    return result


def build_fixture(cls: type[BenchSystem], job: dict[str, Any]) -> dict[str, Any]:
    """Write a fixture with the system's batch path; describe it for readers."""
    db = Path(job["db"])
    args = job["args"]
    kind = args["kind"]
    system = cls(db)
    if kind == "session":
        _rm(db)
        conv = conversation(args["spec"])
        seconds, extra = _timed(lambda: system.write(conv, "batch"))
        ref = SessionRef.of(conv, **extra)
    elif kind == "listing":
        _rm(db)
        count = args["count"]
        convs = [
            conversation({**args["spec"], "session_id": f"s{k:06d}", "seed": k % 5})
            for k in range(count)
        ]
        seconds, _ = _timed(lambda: system.write_many(convs))
        # Catch the listing view up now, so W3 times a read, not a projection.
        system.list_page()
        conv = convs[-1]
        ref = SessionRef.of(conv)
    elif kind == "compact":
        source = Path(args["source_db"])
        store_bytes(source)
        _rm(db)
        shutil.copyfile(source, db)
        conv = conversation(args["spec"])
        source_ref = SessionRef(**args["source_ref"])
        conv.compaction(0.9)
        seconds, _ = _timed(lambda: system.compact(source_ref, conv))
        ref = SessionRef.of(conv, **source_ref.extra)
    else:
        msg = f"unknown fixture kind {kind!r}"
        raise ValueError(msg)
    system.close()
    return {"seconds": seconds, "ref": ref.to_json(), "bytes": store_bytes(db)}


def cold(cls: type[BenchSystem], job: dict[str, Any]) -> dict[str, Any]:
    """One cold operation: open the store and do it, in this fresh process."""
    db = Path(job["db"])
    args = job["args"]
    op = job["op"]
    ref = SessionRef(**args["ref"]) if "ref" in args else None
    group = None
    if op == "append":
        conv = conversation(args["spec"])
        group = next_turns(conv, args["append_index"] + 1)[0]
    start, cpu = time.perf_counter(), time.process_time()
    system = cls(db)
    if op == "read_all":
        value: Any = system.read_all(ref)  # type: ignore[arg-type]
    elif op == "read_tail":
        value = system.read_tail(ref)  # type: ignore[arg-type]
    elif op == "list":
        value = system.list_page(50)
    elif op == "fork":
        value = system.fork_read(ref, args["child_id"])  # type: ignore[arg-type]
    elif op == "append":
        system.append_group(ref, group)  # type: ignore[arg-type]
        value = [] if group is None else group
    else:
        msg = f"unknown op {op!r}"
        raise ValueError(msg)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    system.close()
    count = len(value)
    return {"seconds": seconds, "cpu": cpu, "count": count, "digest": digest(value)}


OPS: dict[str, Callable[[type[BenchSystem], dict[str, Any]], dict[str, Any]]] = {
    "probe": probe,
    "w1": w1,
    "build": build_fixture,
    "read_all": cold,
    "read_tail": cold,
    "list": cold,
    "fork": cold,
    "append": cold,
}


def main(argv: list[str]) -> int:
    """Run the job named by ``argv[1]``; always write a result file."""
    job = json.loads(Path(argv[1]).read_text())
    out = Path(job["out"])
    try:
        cls = system_class(job["system"], job.get("checkout"))
        if job["op"] != "probe":
            cls.preload()
            # A service imported long ago and its collector has settled since; a
            # fresh worker has not: without this, the first full pass over the
            # imports' objects falls into whichever sample's window each
            # system's import layout puts it (docs/performance.md).
            gc.collect()
        result = {"ok": True, **OPS[job["op"]](cls, job)}
    except Exception as error:
        result = {
            "ok": False,
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(limit=8),
        }
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
