"""Ask Warden before a Python agent runs one of its own tools (POST /api/v1/review).

Standard library only (urllib). The agent's tools meet the same policy, hard blocks,
approvals and audit trail as the tools it reaches through Warden's gateway:

    WARDEN_URL=http://127.0.0.1:8640 WARDEN_TOKEN=wdn_... python3 review.py shell_exec '{"command": "ls"}'

WARDEN_TOKEN is an agent token (warden token create --role agent ...): the tenant, role and
profile the review runs as are the token's.
"""

import json
import os
import sys
import urllib.error
import urllib.request


def review(url, token, tool, tool_input, workspace, session="", wait=0):
    """Return Warden's answer for one call: a dict with decision, blockers, call and card.

    With wait > 0 an ask waits up to that many seconds for a person to answer its card in
    Warden's console; the decision is then the answer (allow or deny), or still ask.
    """
    body = {"tool": tool, "input": tool_input, "workspace": workspace,
            "harness": "python-agent", "session": session, "wait": wait}
    req = urllib.request.Request(
        url.rstrip("/") + "/api/v1/review", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=wait + 30) as res:
        return json.load(res)


def may_run(url, token, tool, tool_input, workspace, **kw):
    """Return (True, "") when the call may run, else (False, Warden's reasons).

    Anything but an allow refuses: an error of Warden's, or an ask nobody answered in time,
    never lets the call through.
    """
    try:
        answer = review(url, token, tool, tool_input, workspace, **kw)
    except (urllib.error.URLError, OSError, ValueError) as err:
        return False, "Warden could not be asked: %s" % err
    if answer["decision"] == "allow":
        return True, ""
    reasons = ", ".join(b["code"] + (" (%s)" % b["rule"] if b.get("rule") else "") for b in answer["blockers"])
    card = answer.get("card")
    if card:
        reasons += " [card %s: %s]" % (card["id"], card["state"])
    return False, "Warden: %s: %s" % (answer["decision"], reasons)


if __name__ == "__main__":
    tool = sys.argv[1] if len(sys.argv) > 1 else "files_read"
    tool_input = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    ok, why = may_run(os.environ.get("WARDEN_URL", "http://127.0.0.1:8640"), os.environ.get("WARDEN_TOKEN", ""),
                      tool, tool_input, os.environ.get("WARDEN_WORKSPACE", os.getcwd()),
                      session=os.environ.get("WARDEN_SESSION", ""), wait=float(os.environ.get("WARDEN_WAIT", "0")))
    print(json.dumps({"allowed": ok, "reason": why}))
