// Peer: the official TypeScript MCP SDK (the version package-lock.json pins), on Node.
//
//     node server.mjs stdio | http HOST PORT [--json] [--stateless]
//
// McpServer with the harness contract's tools (bench/peers/contract.py), resource and
// prompt. stdio: StdioServerTransport. http: StreamableHTTPServerTransport on node:http at
// /mcp, as the SDK documents it: stateful, one McpServer and transport per session, found
// by its Mcp-Session-Id; --stateless, a fresh McpServer and transport per request (a
// stateless transport cannot be reused); --json, enableJsonResponse (else every POST is
// answered with an SSE stream). MCPBENCH_EVENT_LOG=FILE: the sleep tool logs when it
// starts and when it ends, as the contract says.
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const MAX_BODY = 4 * 1024 * 1024;
const eventLog = process.env.MCPBENCH_EVENT_LOG;

function logEvent(kind, seconds, how = "") {
  if (eventLog) {
    const line = `${kind} ${(Date.now() / 1000).toFixed(6)} ${seconds} ${how}`.trimEnd();
    appendFileSync(eventLog, line + "\n");
  }
}

const text = (value) => ({ content: [{ type: "text", text: String(value) }] });

function sleep(seconds, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error("cancelled"));
    });
  });
}

function build() {
  const server = new McpServer({ name: "bench-ts-sdk", version: "0" });
  const echo = { description: "Return text unchanged.", inputSchema: { text: z.string() } };
  server.registerTool("echo", echo, async ({ text: value }) => text(value));
  // Node has no worker threads for a plain function: the same tool under the other name.
  server.registerTool("echo_sync", echo, ({ text: value }) => text(value));
  server.registerTool(
    "add",
    { description: "Add two integers.", inputSchema: { a: z.number().int(), b: z.number().int() } },
    async ({ a, b }) => text(a + b),
  );
  server.registerTool(
    "sleep",
    { description: "Sleep for `seconds`.", inputSchema: { seconds: z.number() } },
    async ({ seconds }, extra) => {
      logEvent("start", seconds);
      let how = "error";
      try {
        await sleep(seconds, extra.signal);
        how = "completed";
        return text("slept");
      } catch (error) {
        if (extra.signal.aborted) how = "cancelled";
        throw error;
      } finally {
        logEvent("end", seconds, how);
      }
    },
  );
  server.registerTool(
    "progress",
    { description: "Report progress `steps` times.", inputSchema: { steps: z.number().int() } },
    async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 0; i < steps; i++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i + 1, total: steps },
          });
        }
      }
      return text(`done ${steps}`);
    },
  );
  server.registerResource(
    "static",
    "bench://static",
    { description: "A static text resource." },
    async (uri) => ({ contents: [{ uri: uri.href, text: "static resource" }] }),
  );
  server.registerPrompt(
    "greet",
    { description: "A one-line prompt.", argsSchema: { name: z.string() } },
    ({ name }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Say hello to ${name}.` } }],
    }),
  );
  return server;
}

function parseArgv(argv) {
  const [transport, ...words] = argv;
  const flags = new Set(words.filter((w) => w.startsWith("--")));
  const where = words.filter((w) => !w.startsWith("--"));
  const unknown = [...flags].filter((f) => !["--json", "--stateless"].includes(f));
  if (!["stdio", "http"].includes(transport) || unknown.length) {
    console.error("usage: server.mjs stdio | http HOST PORT [--json] [--stateless]");
    process.exit(2);
  }
  return {
    transport,
    host: where[0] ?? "127.0.0.1",
    port: Number(where[1] ?? 8000),
    json: flags.has("--json"),
    stateless: flags.has("--stateless"),
  };
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new Error("body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function refuse(res, status, message) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message } }));
}

function serveHttp(opts) {
  const sessions = new Map(); // session id -> transport
  const enableJsonResponse = opts.json;

  async function stateless(req, res, body) {
    const server = build();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse,
    });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async function stateful(req, res, body) {
    const id = req.headers["mcp-session-id"];
    let transport = id === undefined ? undefined : sessions.get(id);
    if (transport === undefined) {
      if (id !== undefined) return refuse(res, 404, "Session not found");
      if (req.method !== "POST" || !isInitializeRequest(body)) {
        return refuse(res, 400, "No session: initialize first");
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse,
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }

  const http = createServer(async (req, res) => {
    try {
      if (new URL(req.url, "http://x").pathname !== "/mcp") {
        res.writeHead(404).end();
        return;
      }
      let body;
      if (req.method === "POST") {
        try {
          body = JSON.parse((await readBody(req)).toString("utf8"));
        } catch {
          return refuse(res, 400, "Parse error");
        }
      }
      await (opts.stateless ? stateless : stateful)(req, res, body);
    } catch (error) {
      if (!res.headersSent) refuse(res, 500, String(error).slice(0, 200));
      else res.end();
    }
  });
  // keep-alive as long as the load drivers' connections live, like the Python peers'
  http.keepAliveTimeout = 120_000;
  http.headersTimeout = 121_000;
  http.listen(opts.port, opts.host);
}

const opts = parseArgv(process.argv.slice(2));
if (opts.transport === "stdio") {
  await build().connect(new StdioServerTransport());
} else {
  serveHttp(opts);
}
