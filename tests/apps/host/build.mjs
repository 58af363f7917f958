// Builds the host page: host.js bundled (the MCP TypeScript client and the App Bridge)
// next to index.html, in dist/.
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

const here = new URL(".", import.meta.url);
await mkdir(new URL("dist/", here), { recursive: true });
await build({
  entryPoints: [new URL("host.js", here).pathname],
  bundle: true,
  format: "esm",
  target: "es2022",
  outfile: new URL("dist/host.js", here).pathname,
  legalComments: "none",
});
await copyFile(new URL("index.html", here), new URL("dist/index.html", here));
console.log("dist/index.html, dist/host.js");
