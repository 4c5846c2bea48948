"""The LangGraph SDK's ``multitask_strategy="enqueue"``: a run asked of a busy thread waits for
the thread's active run and starts after it, in the order asked, through the same run service as
every other run.

A queued run is a stored row (``storage.run_queue``), not a task in memory: a restart loses
none. Each process drains the threads it queued runs on (and, at start-up, every thread with a
waiting run): it follows the thread's active run to its end (the join of ``RunService``, woken
by the run's own events, in this process or through the log), then starts the oldest waiting
run as the request it was (an ``input``, or a ``command.resume`` translated against the consents
pending *then*). Taking the row and claiming the thread are one transaction (``QueuedHold``), so
two processes draining one thread start it once; the run takes the row's id, the id the client
was given. A start refused (409 ``consent_pending``: a message while a raw interrupt waits, say)
is recorded on the row with its code and message and shown as the run's ``error``; the next
waiting run is tried.

A request that waits for its run (``runs.stream``, ``runs.wait``) holds a future the drainer
resolves: with the run itself when it started it here (its events live from the first), or with
what the row says (started elsewhere: followed through the log; refused; cancelled).

``enqueue`` is the SDK's default, and most runs find their thread idle: such a run starts at once
(``start_now``), with no row, handed to its request's wait as a drainer would hand it. Its claim
keeps the queue's order (``BehindQueue``): a run found waiting in the thread's queue in the
claim's transaction goes first, and this one is queued behind it.

The room: ``_run_queue`` (the queue itself), ``_waits`` (what a waiting request holds, and the
claims that keep the queue's order), ``_drainers`` (one task a thread that starts its runs in
turn, woken when a run is queued or due)."""

from __future__ import annotations

from consentry.runtime.runs.sdk.queue._run_queue import RunQueue
from consentry.runtime.runs.sdk.queue._waits import Queued, Waiter

__all__ = ["Queued", "RunQueue", "Waiter"]
