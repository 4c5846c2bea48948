"""What a JSON request body is checked for before the app parses it: UTF-8 text, nesting depth
(``CONSENTRY_MAX_JSON_DEPTH``) and array sizes (``CONSENTRY_MAX_LIST_ITEMS``).

Without these a body nested 10,000 deep would reach Python's parser (a ``RecursionError``) or the
validators that walk it, and a long array would be validated item by item. The checks run on a
body already cut to ``CONSENTRY_MAX_BODY_BYTES`` (``body_limit``), so their memory is bounded:

- bytes that are not UTF-8 text: 422 ``unstorable_text`` (JSON is UTF-8, RFC 8259);
- nesting deeper than the limit: 422 ``limit_exceeded`` (``details.limit`` ``max_json_depth``).
  The body's own object or array is level 1. Python's parser stops at about 1000 levels with a
  ``RecursionError``, which means far deeper than the limit (at most 200);
- an array with more items than the limit, anywhere: 422 ``limit_exceeded`` (``max_list_items``).

A body that is not JSON at all is left to the app, which answers 422 ``malformed_json``. A body
with no more brackets than the depth limit and no more commas than the item limit cannot break
either, and is not parsed here (most requests).
"""

from __future__ import annotations

import json
from typing import Any

from consentry.errors import ConsentryError, InvalidRequestError
from consentry.schemas.requests import UNSTORABLE_TEXT

__all__ = ["json_body_problem"]


def json_body_problem(body: bytes, *, max_depth: int, max_list_items: int) -> ConsentryError | None:
    """Why ``body`` (a JSON request body) is refused before it is parsed, or None."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InvalidRequestError(
            f"The request body is not valid UTF-8 text (byte {exc.start} of it cannot be read).",
            code=UNSTORABLE_TEXT,
            details={"where": "body", "byte": exc.start},
        )
    openers = text.count("[") + text.count("{")
    if openers <= max_depth and text.count(",") < max_list_items:
        return None  # neither limit can be reached
    try:
        value = json.loads(text)
    except RecursionError:
        return _too_deep(max_depth)
    except ValueError:
        return None  # not JSON: the app says so (malformed_json)
    return _shape_problem(value, max_depth=max_depth, max_list_items=max_list_items)


def _shape_problem(value: Any, *, max_depth: int, max_list_items: int) -> ConsentryError | None:
    """The first level past ``max_depth`` or array past ``max_list_items``, walked without
    recursion."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, list):
            if len(node) > max_list_items:
                where = ".".join(str(part) for part in path) or "the body"
                return InvalidRequestError(
                    f"The array at {where} has {len(node)} items; at most {max_list_items} are "
                    "allowed (max_list_items).",
                    code="limit_exceeded",
                    details={"limit": "max_list_items", "max": max_list_items, "where": where},
                )
            children: Any = enumerate(node)
        elif isinstance(node, dict):
            children = node.items()
        else:
            continue
        if depth > max_depth:
            return _too_deep(max_depth)
        stack.extend(
            (child, depth + 1, (*path, key))
            for key, child in children
            if isinstance(child, list | dict)
        )
    return None


def _too_deep(max_depth: int) -> ConsentryError:
    return InvalidRequestError(
        f"The request body nests objects and arrays more than {max_depth} levels deep "
        "(max_json_depth).",
        code="limit_exceeded",
        details={"limit": "max_json_depth", "max": max_depth},
    )
