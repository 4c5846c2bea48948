"""HTTP: parse, authorize, call the runtime, render. No SQL and no graph code here.

Three faces of one run service: ``v1`` (Consentry's own API), ``sdk`` (the LangGraph SDK's) and
``agui`` (AG-UI). A face starts and follows runs through ``run_requests`` (the chat request's
path: stream slot, idempotency, the run service, the response) and turns a client's answer to a
consent into a decision with ``consent_answers``; a thread id a client chooses is checked by
``new_thread_ids``. The server's own routes: ``health`` (``/healthz``, ``/readyz``),
``metrics``, ``api_docs`` (``/docs``) and ``web`` (the built-in web app). ``http`` holds the
plumbing every route shares."""
