// Builds the greeter's view: view/greeter.js, bundled with the MCP Apps SDK, inlined into
// view/greeter.html, written to dist/greeter.html. A view is one self-contained document:
// the host renders it in a sandbox that loads nothing the resource's CSP does not name.
import { build } from "esbuild";
import { mkdir, readFile, writeFile } from "node:fs/promises";

const here = new URL(".", import.meta.url);
const bundled = await build({
  entryPoints: [new URL("view/greeter.js", here).pathname],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  write: false,
  legalComments: "none",
});
// A "</script" inside the code would end the inline script early.
const code = bundled.outputFiles[0].text.replaceAll("</script", "<\\/script");
const template = await readFile(new URL("view/greeter.html", here), "utf8");
const marker = "<!-- greeter.js -->";
if (!template.includes(marker)) throw new Error(`view/greeter.html has no ${marker}`);
const html = template.replace(marker, () => `<script type="module">${code}</script>`);
await mkdir(new URL("dist/", here), { recursive: true });
await writeFile(new URL("dist/greeter.html", here), html);
console.log(`dist/greeter.html: ${html.length} bytes`);
