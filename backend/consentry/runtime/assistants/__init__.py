"""The LangGraph SDK's assistants: each served graph's own, and those a client creates.

A served graph's assistant is never created, changed or deleted by a client. Its id is its
graph's name, or the UUID the LangGraph Agent Server gives a graph's default assistant
(``uuid5(NAMESPACE_URL, name)``): an app that kept either id finds the same assistant here.

An assistant a client creates (``storage.assistants``) is the owner's configuration of a served
graph: a ``config`` (its ``configurable`` values) and a ``context`` its runs start with (a run's
own values win, key by key), a name, a description and metadata. Each change is a new version;
``set_latest`` goes back to one. Like threads, an owner sees only its own. Its ``context`` is
checked against its graph's ``context_schema`` when it is stored, as a run's is.

A graph's drawing is made once per graph (and ``xray`` depth).

The assistant and what may change of it (``_assistant``); the served graphs' and the owners'
assistants (``_assistants``).
"""

from __future__ import annotations

from consentry.runtime.assistants._assistant import Assistant, AssistantChanges, assistant_uuid
from consentry.runtime.assistants._assistants import Assistants

__all__ = ["Assistant", "AssistantChanges", "Assistants", "assistant_uuid"]
