// One MCP session of the official TypeScript SDK client over streamable HTTP, driven line by
// line: the multi-instance test (trio_test.go) drives it through a round-robin proxy while it
// answers cards, changes the policy's data and kills instances.
//
//   node session.mjs URL TOKEN
//
// Once connected it prints {"ready": true, "server": {...}, "session": ID}. Then each line on
// standard input is a command with an "id", and each reply a line with the same "id". Commands
// run as they arrive, so a call that waits (for a person, or for an instance that died) does
// not hold up the next command:
//   {"id", "op": "tools"}                              → {"names": [...], "changes": N}
//   {"id", "op": "call", "name", "arguments", "timeoutMs"}
//                                                      → {"isError", "text"}
//   {"id", "op": "ping"}                               → {}
//   {"id", "op": "changed", "after": N, "name", "present"}
//        waits for a notifications/tools/list_changed beyond the Nth, lists the tools, and
//        waits for the next while NAME is not yet present (or absent) → {"names", "changes"}
//   {"id", "op": "close"}                              closes the session, replies, exits
// N counts the list_changed notifications the session has had. A reply is {"id", "ok": true,
// ...} or {"id", "ok": false, "error": "..."}. The SDK does all the rest as it does for any
// application: it reopens its GET stream when it breaks, and it never sends a request again.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token] = process.argv.slice(2);
const reply = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "warden-trio", version: "1.0.0" });

// The notifications so far, and who waits for the next.
let changes = 0;
let waiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes++;
  const w = waiters;
  waiters = [];
  for (const wake of w) wake();
});
const changeAfter = (n) => (changes > n ? Promise.resolve() : new Promise((wake) => waiters.push(wake)).then(() => changeAfter(n)));

try {
  await client.connect(transport);
} catch (err) {
  process.stderr.write(`connect: ${err?.message ?? err}\n`);
  process.exit(1);
}
// What the transport reports (a stream cut, a reconnection failing) goes to standard error,
// which the test shows when it fails.
transport.onerror = ((prev) => (err) => {
  process.stderr.write(`transport: ${err?.message ?? err}\n`);
  prev?.(err);
})(transport.onerror);
reply({ ready: true, server: client.getServerVersion(), session: transport.sessionId });

const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();

async function run(cmd) {
  switch (cmd.op) {
    case "tools": {
      const n = changes;
      return { names: await names(), changes: n };
    }
    case "call": {
      const options = cmd.timeoutMs ? { timeout: cmd.timeoutMs } : undefined;
      const r = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, options);
      const text = (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
      return { isError: Boolean(r.isError), text };
    }
    case "ping":
      await client.ping();
      return {};
    case "changed": {
      let after = cmd.after;
      for (;;) {
        await changeAfter(after);
        after = changes;
        const got = await names();
        if (got.includes(cmd.name) === cmd.present) {
          return { names: got, changes: after };
        }
      }
    }
    case "close":
      await client.close();
      return {};
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (err) {
    reply({ ok: false, error: `bad command ${line}: ${err.message}` });
    return;
  }
  run(cmd).then(
    (r) => {
      reply({ id: cmd.id, ok: true, ...r });
      if (cmd.op === "close") process.exit(0);
    },
    (err) => reply({ id: cmd.id, ok: false, error: String(err?.message ?? err) }),
  );
});
lines.on("close", () => process.exit(0));
