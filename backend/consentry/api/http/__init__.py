"""HTTP plumbing every face shares: the caller and request headers as dependencies (``deps``),
request ids and the access line (``request_ids``), CORS (``cors``), the limits a request meets
before a route parses it (``body_limit``, ``json_limits``, ``url_text``, answered by
``middleware_errors``) and after (``limits``), request errors as the one error body
(``request_errors``, ``responses``), and Server-Sent Events (``sse_response``, ``streaming``,
``last_event_id``)."""
