// The TypeScript SDK's client, for answerback's interop tests: it starts an MCP server
// over stdio, calls each named tool with no arguments, and prints one JSON line per
// call. The SDK checks every result's structured content against the tool's output
// schema (asserting formats), as the hosts built on it do.
//
//   node interop/typescript_client.mjs TOOL[,TOOL...] COMMAND [ARG...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [tools, command, ...args] = process.argv.slice(2);
const client = new Client({ name: "answerback-interop", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args }));
await client.listTools(); // the SDK learns the output schemas from the listing
for (const name of tools.split(",")) {
  try {
    const result = await client.callTool({ name, arguments: {} });
    console.log(JSON.stringify({ tool: name, result }));
  } catch (error) {
    console.log(JSON.stringify({ tool: name, error: String(error) }));
  }
}
await client.close();
