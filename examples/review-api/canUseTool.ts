// A Claude Agent SDK-style canUseTool that asks Warden before each tool call, so the agent's
// own tools meet the same policy, hard blocks, approvals and audit trail as the tools it
// reaches through Warden's gateway. Plain fetch, no dependencies (Node 20 or later).
//
//   WARDEN_URL=http://127.0.0.1:8640 WARDEN_TOKEN=wdn_... node dist/canUseTool.js Read '{"file_path":"README.md"}'
//
// WARDEN_TOKEN is an agent token (warden token create --role agent ...): the tenant, role and
// profile the review runs as are the token's.

/** What canUseTool answers, as the Claude Agent SDK reads it. */
export type PermissionResult =
  | { behavior: "allow"; updatedInput: Record<string, unknown> }
  | { behavior: "deny"; message: string };

/** The answer of POST /api/v1/review (the shape of `warden review --json`, plus call and card). */
interface Review {
  decision: "allow" | "ask" | "deny";
  blockers: { code: string; rule?: string; detail?: string }[];
  call?: string;
  card?: { id: string; state: string; answer?: string };
}

/** toWarden maps a Claude Code tool and its input to Warden's tool names and inputs. */
export function toWarden(tool: string, input: Record<string, unknown>): { tool: string; input: Record<string, unknown> } {
  const path = input.file_path ?? input.path;
  switch (tool) {
    case "Bash":
      return { tool: "shell_exec", input: { command: input.command } };
    case "Read":
      return { tool: "files_read", input: { path } };
    case "Write":
      return { tool: "files_write", input: { path, content: input.content } };
    case "Edit":
      return { tool: "files_edit", input: { path, old: input.old_string, new: input.new_string } };
    case "Glob":
      return { tool: "files_find", input: { path: input.path ?? ".", pattern: input.pattern } };
    case "Grep":
      return { tool: "files_search", input: { path: input.path ?? ".", query: input.pattern } };
    case "WebFetch":
      return { tool: "net_fetch", input: { url: input.url } };
    default:
      return { tool, input }; // Warden's own names, and mcp__<connector>__<tool>
  }
}

/**
 * canUseTool asks Warden about one call and waits up to `wait` seconds for a person to answer
 * an ask in Warden's console. Anything but an allow is a deny with Warden's reasons: an error
 * of Warden's, or an ask nobody answered in time, never lets the call through.
 */
export async function canUseTool(
  toolName: string,
  input: Record<string, unknown>,
  opts: { url: string; token: string; workspace: string; session?: string; wait?: number },
): Promise<PermissionResult> {
  const call = toWarden(toolName, input);
  let review: Review;
  try {
    const res = await fetch(new URL("/api/v1/review", opts.url), {
      method: "POST",
      headers: { Authorization: `Bearer ${opts.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ ...call, workspace: opts.workspace, harness: "claude-agent-sdk", session: opts.session, wait: opts.wait ?? 0 }),
    });
    if (!res.ok) {
      return { behavior: "deny", message: `Warden answered ${res.status}: ${await res.text()}` };
    }
    review = (await res.json()) as Review;
  } catch (err) {
    return { behavior: "deny", message: `Warden could not be asked: ${err}` };
  }
  if (review.decision === "allow") {
    return { behavior: "allow", updatedInput: input };
  }
  const reasons = review.blockers.map((b) => (b.rule ? `${b.code} (${b.rule})` : b.code)).join(", ");
  const card = review.card ? ` [card ${review.card.id}: ${review.card.state}]` : "";
  return { behavior: "deny", message: `Warden: ${review.decision}: ${reasons}${card}` };
}

// Run as a program: review the call on the command line and print the answer as JSON.
if (process.argv[1]?.endsWith("canUseTool.js")) {
  const [tool = "Read", input = "{}"] = process.argv.slice(2);
  const result = await canUseTool(tool, JSON.parse(input), {
    url: process.env.WARDEN_URL ?? "http://127.0.0.1:8640",
    token: process.env.WARDEN_TOKEN ?? "",
    workspace: process.env.WARDEN_WORKSPACE ?? process.cwd(),
    session: process.env.WARDEN_SESSION,
    wait: Number(process.env.WARDEN_WAIT ?? "0"),
  });
  console.log(JSON.stringify(result));
}
