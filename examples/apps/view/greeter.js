// The greeter's view. It talks to the host, never to the server: the host renders it,
// passes it the result of the tool that opened it, and forwards its tool calls.
import { App } from "@modelcontextprotocol/ext-apps";

const status = document.getElementById("status");
const answer = document.getElementById("answer");
const button = document.getElementById("greet");
const input = document.getElementById("name");

const textOf = (result) => result.content?.find((block) => block.type === "text")?.text;

const app = new App({ name: "Greeter", version: "1.0.0" });

// The result of open_greeter, the tool the model called to show this view.
app.ontoolresult = (result) => {
  status.textContent = textOf(result) ?? "Opened.";
};

// "greet" is listed to apps only: the host forwards the call to the server. (No <form>:
// a sandbox without allow-forms refuses to submit one, even to a script.)
async function greet() {
  answer.textContent = "…";
  try {
    const result = await app.callServerTool({ name: "greet", arguments: { name: input.value } });
    answer.textContent = result.isError ? `Error: ${textOf(result)}` : textOf(result);
  } catch (error) {
    answer.textContent = `The host refused: ${error.message}`;
  }
}
button.addEventListener("click", greet);
input.addEventListener("keydown", (event) => event.key === "Enter" && greet());

await app.connect();
