"""What every face does with a request that starts or follows a run, around the run service.

A message, a decision, a retry or a join is one call here: the caller's rate limit is charged
(only for a request that runs: an idempotent replay is not), its ``Idempotency-Key`` is honoured
(the first request's run streamed again, or its stored answer), the edits it carries are checked
against the size limits, and an event stream holds one of the caller's stream slots while it is
open. The run itself (start, decide, retry, join, replay) is ``runtime.runs.RunService``; how its
events go out is ``api.http.streaming``. A second protocol face calls the same operations.

Public: :class:`RunRequests` (made once with the services, ``app``) and :data:`RunRequestsDep`,
which a route depends on. Private: ``_requests`` holds the class and its operations (the key is
resolved in one place, ``IdempotencyGuard.held``), ``_idempotent`` the events of a repeat's run
(the first request's, replayed), ``_responses`` how the events go out (a face's headers, frames
and graph outputs; a run cancelled when its client leaves).
"""

from __future__ import annotations

from consentry.api.run_requests._requests import Followed, RunRequests, RunRequestsDep

__all__ = ["Followed", "RunRequests", "RunRequestsDep"]
