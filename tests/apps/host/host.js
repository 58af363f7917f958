// A web host of MCP Apps, as a chat client would be one: it connects to the server with
// the official TypeScript client, lists the tools, calls the one the "model" picks, reads
// the view the tool names, renders it in a sandboxed iframe under the CSP its _meta.ui
// declares, and bridges the view to the server with the official App Bridge, forwarding
// only the tool calls the extension allows an app to make.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const EXTENSION_ID = "io.modelcontextprotocol/ui";
const HOST = { name: "mcpactor-test-host", version: "1.0.0" };
const state = (window.hostState = { ready: false, errors: [], appCalls: [] });
const $ = (id) => document.getElementById(id);

const visibility = (tool) => tool._meta?.ui?.visibility ?? ["model", "app"];

// The policy the extension prescribes: its restrictive default, opened only to the
// origins the resource declares.
function contentSecurityPolicy(csp = {}) {
  const list = (domains) => (domains ?? []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${list(csp.resourceDomains)}`,
    `style-src 'self' 'unsafe-inline' ${list(csp.resourceDomains)}`,
    `connect-src ${list(csp.connectDomains) || "'none'"}`,
    `img-src 'self' data: ${list(csp.resourceDomains)}`,
    `font-src 'self' ${list(csp.resourceDomains)}`,
    `media-src 'self' data: ${list(csp.resourceDomains)}`,
    `frame-src ${list(csp.frameDomains) || "'none'"}`,
    "object-src 'none'",
    `base-uri ${list(csp.baseUriDomains) || "'self'"}`,
  ].join("; ");
}

function withPolicy(html, csp) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(csp)}">`;
  return /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (head) => head + meta) : meta + html;
}

async function main() {
  const server = new URL(new URLSearchParams(location.search).get("server"));
  const client = new Client(HOST, {
    capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(server));
  const info = client.getServerVersion();
  const capabilities = client.getServerCapabilities();
  state.server = info;
  state.serverCapabilities = capabilities;
  $("server").textContent = `${info.name} ${info.version} at ${server}`;

  const { tools } = await client.listTools();
  state.tools = tools;
  const modelTools = tools.filter((tool) => visibility(tool).includes("model"));
  const appTools = new Set(tools.filter((tool) => visibility(tool).includes("app")).map((t) => t.name));
  state.modelTools = modelTools.map((tool) => tool.name);
  state.appOnlyTools = tools.filter((tool) => !visibility(tool).includes("model")).map((t) => t.name);
  $("model-tools").replaceChildren(...state.modelTools.map((name) => Object.assign(document.createElement("li"), { textContent: name })));
  $("app-tools").replaceChildren(...state.appOnlyTools.map((name) => Object.assign(document.createElement("li"), { textContent: name })));

  // What a model would do: call the tool that has a view.
  const tool = modelTools.find((candidate) => getToolUiResourceUri(candidate));
  if (!tool) throw new Error("no tool the model sees names a view");
  const uri = getToolUiResourceUri(tool);
  const read = await client.readResource({ uri });
  const view = read.contents.find((content) => content.uri === uri);
  if (view?.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} is not ${RESOURCE_MIME_TYPE}: ${view?.mimeType}`);
  const ui = view._meta?.ui ?? {};
  state.view = { uri, mimeType: view.mimeType, ui, bytes: view.text.length };
  $("view").textContent = `${uri} (${view.mimeType}, ${view.text.length} bytes)`;

  const args = { name: "world" };
  $("call").textContent = `tools/call ${tool.name} ${JSON.stringify(args)}`;
  const result = await client.callTool({ name: tool.name, arguments: args });

  const iframe = document.createElement("iframe");
  // An opaque origin: the view cannot reach this page, its storage or its cookies.
  iframe.setAttribute("sandbox", "allow-scripts");
  const allow = buildAllowAttribute(ui.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  if (ui.prefersBorder) iframe.classList.add("bordered");
  iframe.title = tool.title ?? tool.name;
  $("frame").append(iframe);

  // No client handed to the bridge: the host forwards what it allows, itself.
  const bridge = new AppBridge(null, HOST, { serverTools: {}, logging: {} }, {
    hostContext: { theme: "light", platform: "web", displayMode: "inline" },
  });
  bridge.oncalltool = async (params) => {
    state.appCalls.push(params.name);
    if (!appTools.has(params.name)) throw new Error(`the app may not call ${params.name}`);
    return client.callTool(params);
  };
  bridge.addEventListener("loggingmessage", (params) => console.log("view:", params.data));
  bridge.addEventListener("initialized", async () => {
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    $("status").textContent = `rendered ${uri}`;
    state.ready = true;
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withPolicy(view.text, ui.csp);
}

main().catch((error) => {
  state.errors.push(String(error?.stack ?? error));
  $("error").textContent = String(error);
  console.error(error);
});
