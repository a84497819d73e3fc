"""Where the Great Expectations suite runs: in the caller's process (``InProcessSuite``), or in a process of its
own started before a run needs it (``SuiteProcess``), so that importing Great Expectations overlaps the run's
first steps on another core instead of being waited for inside the checks' step.

Why a process: importing Great Expectations (with the pydantic models, SQLAlchemy, altair it loads) is the largest
single import of a run, pure Python, so a thread would only take turns with the run for the interpreter. A
``SuiteProcess`` is started when it is made (the caller does that first, before it opens a database or starts a
thread) and imports GX at once; ``run_suite`` then sends it the chunks of runs as Arrow IPC streams and receives
the ``Outcome`` list, or the error the suite raised, which it raises again. The outcomes are those of
``pipeline.validate.expectations.run_suite`` called on the same chunks: it is the same function, in the other
process.

Both kinds have one method, ``run_suite(chunks, known_hw, duplicate_of) -> list[Outcome]``, with
``pipeline.validate.expectations.run_suite``'s arguments, result and errors; a ``SuiteProcess`` that has gone away
(killed, out of memory) raises ``SuiteProcessGone`` instead, after which the caller runs the suite in its own
process (``pipeline.defs.validate.expectations`` does). This module imports neither GX nor pandas itself, so
making a ``SuiteProcess`` first thing costs the caller only the fork.

``suite_for_a_run`` is the choice ``python -m pipeline run`` makes: a forked ``SuiteProcess`` when the caller has
no other Python thread, else the suite in the caller's own process (never a spawned interpreter per run).
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

import pyarrow as pa

if TYPE_CHECKING:
    from pipeline.validate.expectations import Outcome

# messages from the caller to the process: ("suite", known_hw, duplicate_of), then ("chunk", Arrow IPC bytes) per
# chunk, then ("end",); or ("stop",). Answers: ("outcomes", list[Outcome]) or ("error", the exception).
_SUITE, _CHUNK, _END, _STOP = "suite", "chunk", "end", "stop"


class SuiteProcessGone(RuntimeError):
    """The suite's process ended (killed, out of memory) before it answered; nothing of the caller's is lost."""


class SuiteRunner:
    """Where the suite runs: ``run_suite`` with ``pipeline.validate.expectations.run_suite``'s arguments;
    ``where`` says so in words (the checks' metadata shows it)."""

    where = ""

    def run_suite(self, chunks: Iterable[pa.Table], known_hw: Iterable[str],
                  duplicate_of: Mapping[tuple[str | None, int], str]) -> list[Outcome]:
        """The suite's outcomes for ``chunks`` (``pipeline.validate.expectations.run_suite``)."""
        raise NotImplementedError

    def close(self) -> None:
        """Give back what the runner holds (nothing, unless it is a process)."""

    def __enter__(self) -> SuiteRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class InProcessSuite(SuiteRunner):
    """The suite run in the caller's process: ``pipeline.validate.expectations.run_suite`` as it is."""

    where = "in the check's own process"

    def run_suite(self, chunks: Iterable[pa.Table], known_hw: Iterable[str],
                  duplicate_of: Mapping[tuple[str | None, int], str]) -> list[Outcome]:
        """``pipeline.validate.expectations.run_suite(chunks, known_hw, duplicate_of)``."""
        from pipeline.validate.expectations import run_suite

        return run_suite(chunks, known_hw, duplicate_of)


class SuiteProcess(SuiteRunner):
    """The suite in a process of its own that imports Great Expectations as soon as it starts (module docstring).

    Make it before the caller opens a database or starts a thread; close it with ``close`` (or use it as a context
    manager); it is a daemon process, so it also ends with its caller.

    How it starts (``start_method``, or ``fork_safe_start_method()`` when None): ``fork`` copies the caller as it
    is, at the cost of a fork only, and is what ``python -m pipeline run`` gets, its main thread being its only
    Python thread; ``spawn`` starts a fresh interpreter, and is used when the caller runs other Python threads (a
    pytest-xdist worker's execnet thread, a Dagster daemon or webserver): a fork copies a thread's locks and the
    objects it was changing but not the thread, and CPython warns against forking such a process.

    Raises:
        ValueError: ``start_method`` is not ``fork`` or ``spawn``.
    """

    def __init__(self, start_method: str | None = None) -> None:
        self.start_method = fork_safe_start_method() if start_method is None else start_method
        if self.start_method not in ("fork", "spawn"):
            raise ValueError(f"SuiteProcess: start_method {self.start_method!r} is not fork or spawn")
        context = multiprocessing.get_context(self.start_method)
        self._conn, child = context.Pipe()
        # the child closes its copy of this end, so that it reads the end of the pipe (and ends) when this process
        # ends, however it ends (a killed caller does not end its daemon children)
        self._process = context.Process(target=_serve, args=(child, self._conn), name="great-expectations-suite",
                                        daemon=True)
        self._process.start()
        child.close()

    @property
    def pid(self) -> int | None:
        """The process id of the suite's process."""
        return self._process.pid

    @property
    def where(self) -> str:  # type: ignore[override]
        """In words, where the suite runs."""
        return f"in a process of its own (pid {self.pid}, by {self.start_method}), started before the run's first step"

    def run_suite(self, chunks: Iterable[pa.Table], known_hw: Iterable[str],
                  duplicate_of: Mapping[tuple[str | None, int], str]) -> list[Outcome]:
        """``pipeline.validate.expectations.run_suite``'s outcomes for ``chunks``, computed in the suite's process;
        the chunks are sent one at a time as they are read (only one is held here at once).

        Raises:
            ValueError, PlausibilityError: as ``run_suite`` (raised there, sent back, raised here).
            SuiteProcessGone: the process ended before answering (the chunks read so far are not used again).
        """
        try:
            self._conn.send((_SUITE, list(known_hw), dict(duplicate_of)))
            for chunk in chunks:
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, chunk.schema) as writer:
                    writer.write_table(chunk)
                self._conn.send((_CHUNK, sink.getvalue().to_pybytes()))
                del sink
            self._conn.send((_END,))
            kind, payload = self._conn.recv()
        except (EOFError, OSError) as exc:  # the pipe broke: the process is gone
            self._process.join(timeout=1)
            raise SuiteProcessGone(f"the Great Expectations suite's process {self._process.pid} ended "
                                   f"(exit code {self._process.exitcode}) before it answered: {exc!r}") from exc
        if kind == "error":
            raise payload
        return payload

    def close(self) -> None:
        """Ask the process to end and wait for it (briefly); then it is ended whatever it was doing."""
        try:
            self._conn.send((_STOP,))
        except OSError:
            pass  # already gone
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()
        self._conn.close()


def suite_for_a_run() -> SuiteRunner:
    """Where ``python -m pipeline run`` runs the suite: a ``SuiteProcess`` forked now when this process runs no
    Python thread but the current one (``fork_safe_start_method``), else ``InProcessSuite``.

    Why not a spawned process for a caller with threads (a test worker, an embedding service): a spawn starts a
    new interpreter that imports pyarrow, the pipeline and GX again for every run, while in the caller GX is
    imported by its first run only and kept for every later one. Make it first thing, before the caller opens
    a database; use it as a context manager (``close`` ends a process, and is nothing for the in-process kind).
    """
    return SuiteProcess("fork") if fork_safe_start_method() == "fork" else InProcessSuite()


def fork_safe_start_method() -> str:
    """``fork`` when the calling process runs no Python thread but the current one (``sys._current_frames``
    counts every thread with a Python state, those started by ``_thread`` too, which ``threading`` does not
    list), else ``spawn``. Native threads that libraries start at import (BLAS, Arrow, DuckDB pools) do not
    count: they run no Python code."""
    return "fork" if len(sys._current_frames()) == 1 else "spawn"


def _serve(conn: Connection, callers_end: Connection) -> None:
    """The suite process's loop: import GX now (the reason the process exists), then answer each suite request
    until asked to stop or the caller's end of the pipe closes (``callers_end``, the fork's copy of it, is closed
    first: while it is open here the pipe never ends)."""
    callers_end.close()
    import great_expectations  # noqa: F401  (imported while the caller's run does its first steps)

    from pipeline.validate.expectations import run_suite

    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == _STOP:
            return
        _, known_hw, duplicate_of = message
        received = _chunks(conn)
        try:
            answer: tuple[str, Any] = ("outcomes", run_suite(received, known_hw, duplicate_of))
        except Exception as exc:  # sent back to be raised in the caller, as if it had run there
            answer = ("error", exc)
        for _ in received:  # read up to the request's end, so the next request starts at its beginning
            pass
        try:
            conn.send(answer)
        except Exception as exc:  # an answer that cannot be pickled: its text, raised in the caller as a RuntimeError
            what = f"{type(answer[1]).__name__}: {answer[1]}" if answer[0] == "error" else f"outcomes not sent: {exc!r}"
            conn.send(("error", RuntimeError(f"the suite's process could not send its answer ({what})")))


def _chunks(conn: Connection) -> Iterator[pa.Table]:
    """The chunks of one request, each read from its Arrow IPC stream as the suite asks for it, up to its end."""
    while True:
        message = conn.recv()
        if message[0] == _END:
            return
        yield pa.ipc.open_stream(message[1]).read_all()
