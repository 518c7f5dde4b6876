"""Scripted replies to the criteria judge's prompt (``judges/criteria``) for the local test
server. The server cannot read a rubric, so it decides by words of the criterion:

- a criterion mentioning ``cite`` / ``source``: ``yes`` when the answer has a citation marker
  ``[n]`` (quoted), else ``no``;
- one mentioning ``polite``: ``yes`` when the answer says please / thank / glad (quoted), else
  ``no``;
- any other criterion: ``partly``, without quotes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragjudge.testing.responders import last_user_text, responder
from ragjudge.testing.responders_judges import fenced

_CRITERION = re.compile(r"^Criterion: (.*)$", re.M)
_CITE = re.compile(r"\[\d+\]")
_POLITE = re.compile(r"\b(please|thank\w*|glad)\b", re.I)


@responder("judges/criteria")
def criteria(body: dict[str, Any]) -> str:
    match = _CRITERION.search(last_user_text(body))
    criterion = match.group(1).lower() if match else ""
    answer = fenced(body).get("answer", [""])[0]
    if "cite" in criterion or "source" in criterion:
        pattern, what = _CITE, "a citation marker"
    elif "polite" in criterion:
        pattern, what = _POLITE, "a polite word"
    else:
        return json.dumps({"verdict": "partly", "explanation": "no rule for this criterion"})
    found = pattern.search(answer)
    verdict = "yes" if found else "no"
    quotes = [found.group(0)] if found else []
    explanation = f"the answer {'has' if found else 'lacks'} {what}"
    return json.dumps({"verdict": verdict, "explanation": explanation, "quotes": quotes})
