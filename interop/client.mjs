// A real MCP client for Warden's interop tests: the official TypeScript SDK over streamable HTTP.
//
//   node client.mjs URL TOKEN STEPS_JSON
//   node client.mjs stdio:WARDEN_BINARY TOKEN STEPS_JSON   (runs `warden mcp`, token in $WARDEN_TOKEN)
//
// STEPS_JSON is a list of steps, run in order on one session:
//   {"op": "tools"}                               lists the tools (names, sorted)
//   {"op": "call", "name": N, "arguments": {...}} calls a tool ("timeoutMs": the SDK's request
//                                                  timeout, after which it cancels the call)
//   {"op": "resources"} / {"op": "prompts"}       lists resources / prompts (names, sorted)
//   {"op": "read", "uri": U}                      reads a resource
// It prints one JSON document: {"server": {...}, "steps": [{"ok": ..., ...}]}. A step that fails
// records its error and the run goes on; the process fails only if it cannot connect.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [url, token, stepsJSON] = process.argv.slice(2);
const steps = JSON.parse(stepsJSON ?? "[]");

const transport = url.startsWith("stdio:")
  ? new StdioClientTransport({
      command: url.slice("stdio:".length),
      args: ["mcp"],
      env: { ...process.env, WARDEN_TOKEN: token },
      cwd: process.env.WARDEN_DIR,
      stderr: "inherit",
    })
  : new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
const client = new Client({ name: "warden-interop", version: "1.0.0" });
await client.connect(transport);

const out = { server: client.getServerVersion(), steps: [] };
for (const step of steps) {
  try {
    switch (step.op) {
      case "tools": {
        const { tools } = await client.listTools();
        out.steps.push({ ok: true, names: tools.map((t) => t.name).sort() });
        break;
      }
      case "call": {
        const options = step.timeoutMs ? { timeout: step.timeoutMs } : undefined;
        const r = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, options);
        const text = (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
        out.steps.push({ ok: true, isError: Boolean(r.isError), text, structured: r.structuredContent ?? null });
        break;
      }
      case "resources": {
        const { resources } = await client.listResources();
        out.steps.push({ ok: true, names: resources.map((r) => r.uri).sort() });
        break;
      }
      case "prompts": {
        const { prompts } = await client.listPrompts();
        out.steps.push({ ok: true, names: prompts.map((p) => p.name).sort() });
        break;
      }
      case "read": {
        const r = await client.readResource({ uri: step.uri });
        out.steps.push({ ok: true, text: r.contents.map((c) => c.text ?? "").join("\n") });
        break;
      }
      default:
        out.steps.push({ ok: false, error: `unknown step ${step.op}` });
    }
  } catch (err) {
    out.steps.push({ ok: false, error: String(err?.message ?? err) });
  }
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
