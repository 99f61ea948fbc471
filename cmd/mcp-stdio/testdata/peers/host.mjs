// A host on the TypeScript SDK, the way a desktop app runs a stdio MCP
// server: it starts a command, connects over its stdin/stdout, and plays a
// plan. The end-to-end tests (e2e_peers_test.go) run it with the relay
// binary as the command.
//
//   node host.mjs PLAN -- COMMAND [ARGS...]
//
// PEERS_DIR names the directory the npm packages are installed in. PLAN is
// JSON:
//
//   sdk          "v1" (@modelcontextprotocol/sdk 1.x: the session era) or
//                "v2" (@modelcontextprotocol/client 2.x)
//   negotiation  v2 only: "auto" (probe with server/discover, else
//                initialize) or "2026-07-28" (pinned); absent: the SDK's
//                default, the session era
//   listTools    list the tools
//   calls        [{name, arguments}] tool calls, in order
//   waitLogs     wait for this many notifications/message
//   timeoutMs    the whole run's bound (default 20000)
//
// It prints one JSON object on stdout: what it negotiated (protocolVersion,
// era, serverInfo, the initialize result as received for the session era),
// the tool names, the call results, the number of notifications/message,
// and every message it received, raw, so that the test can check what
// reached the host. Failures print {"error": "..."} and exit 1. The
// command's stderr goes to this process's stderr.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sep = process.argv.indexOf('--');
if (sep < 3 || sep === process.argv.length - 1) {
  console.error('usage: node host.mjs PLAN -- COMMAND [ARGS...]');
  process.exit(2);
}
const plan = JSON.parse(process.argv[2]);
const [command, ...args] = process.argv.slice(sep + 1);
const dir = process.env.PEERS_DIR;
const mod = (p) => import(pathToFileURL(join(dir, 'node_modules', p)).href);

const received = [];
let logs = 0;
let logWaiter = null;

// recording wraps a transport and keeps every message the host receives.
function recording(inner) {
  return {
    start: () => inner.start(),
    send: (m, o) => inner.send(m, o),
    close: () => inner.close(),
    setProtocolVersion: (v) => inner.setProtocolVersion?.(v),
    get sessionId() { return inner.sessionId; },
    set onclose(f) { inner.onclose = f; },
    get onclose() { return inner.onclose; },
    set onerror(f) { inner.onerror = f; },
    get onerror() { return inner.onerror; },
    set onmessage(f) {
      inner.onmessage = (m, extra) => {
        received.push(m);
        if (m.method === 'notifications/message') {
          logs++;
          if (logWaiter && logs >= plan.waitLogs) logWaiter();
        }
        return f(m, extra);
      };
    },
  };
}

async function main() {
  let Client, StdioClientTransport;
  const opts = {};
  if (plan.sdk === 'v1') {
    ({ Client } = await mod('@modelcontextprotocol/sdk/dist/esm/client/index.js'));
    ({ StdioClientTransport } = await mod('@modelcontextprotocol/sdk/dist/esm/client/stdio.js'));
  } else {
    ({ Client } = await mod('@modelcontextprotocol/client/dist/index.mjs'));
    ({ StdioClientTransport } = await mod('@modelcontextprotocol/client/dist/stdio.mjs'));
    if (plan.negotiation === 'auto') opts.versionNegotiation = { mode: 'auto' };
    else if (plan.negotiation) opts.versionNegotiation = { mode: { pin: plan.negotiation } };
  }
  const client = new Client({ name: 'peer-host-' + plan.sdk, version: '1.0.0' }, { capabilities: {}, ...opts });
  const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
  await client.connect(recording(transport));

  const out = { sdk: plan.sdk, serverInfo: client.getServerVersion() ?? null };
  const init = received.find((m) => m.result && m.result.protocolVersion !== undefined && m.result.serverInfo !== undefined);
  out.initializeResult = init ? init.result : null;
  out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? (init ? init.result.protocolVersion : null);
  out.era = client.getProtocolEra?.() ?? 'legacy';
  if (plan.listTools) {
    const res = await client.listTools();
    out.tools = res.tools.map((t) => t.name);
  }
  out.calls = [];
  for (const c of plan.calls ?? []) {
    out.calls.push(await client.callTool({ name: c.name, arguments: c.arguments ?? {} }));
  }
  if (plan.waitLogs && logs < plan.waitLogs) {
    await new Promise((resolve) => { logWaiter = resolve; });
  }
  out.logs = logs;
  out.received = received;
  await client.close();
  return out;
}

const timer = setTimeout(() => {
  console.log(JSON.stringify({ error: `timed out after ${plan.timeoutMs ?? 20000} ms`, logs, received }));
  process.exit(1);
}, plan.timeoutMs ?? 20000);
try {
  const out = await main();
  clearTimeout(timer);
  console.log(JSON.stringify(out));
  process.exit(0);
} catch (e) {
  clearTimeout(timer);
  console.log(JSON.stringify({ error: String(e && e.stack || e), logs, received }));
  process.exit(1);
}
