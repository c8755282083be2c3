// Pure: the client's commands and how a server answer is shown. Every command except Restart and
// Show log forwards to the server with `workspace/executeCommand`; the server does the work.

export interface ClientCommand {
  id: string; // contributed in package.json (client side)
  title: string;
  server?: string; // workspace/executeCommand name on the server
  target: "cuasm" | "cubin" | "none"; // which document the command acts on
}

export const COMMANDS: readonly ClientCommand[] = [
  { id: "cuasm.disassemble", title: "Disassemble cubin", server: "sass-lsp.disassemble", target: "cubin" },
  { id: "cuasm.assemble", title: "Assemble", server: "sass-lsp.assemble", target: "cuasm" },
  { id: "cuasm.check", title: "Check", server: "sass-lsp.check", target: "cuasm" },
  { id: "cuasm.suggestReorders", title: "Suggest reorders", server: "sass-lsp.suggestReorders", target: "cuasm" },
  { id: "cuasm.timeOnGpu", title: "Time on GPU", server: "sass-lsp.timeEdit", target: "cuasm" },
  { id: "cuasm.optimizeSchedule", title: "Optimize schedule", server: "sass-lsp.optimizeSchedule", target: "cuasm" },
  { id: "cuasm.restartServer", title: "Restart server", target: "none" },
  { id: "cuasm.showOutput", title: "Show server log", target: "none" },
];

/**
 * Arguments sent to the server: exactly `[uri]` of the .cubin or .cuasm the command acts on (pygls checks
 * the count against the handler's signature; the server's handlers take `uri: str`).
 */
export function serverArguments(_command: ClientCommand, uri: string): unknown[] {
  return [uri];
}

/** A choice the user can apply: an LSP WorkspaceEdit with a title. */
export interface EditChoice {
  title: string;
  detail?: string;
  edit?: unknown; // lsp.WorkspaceEdit
  command?: { command: string; arguments?: unknown[] }; // lsp.Command, run after the edit
}

export type Presentation =
  | { kind: "message"; severity: "info" | "warning" | "error"; text: string; reveal?: string; details?: string }
  | { kind: "open"; uri: string; text: string }
  | { kind: "pick"; text: string; choices: EditChoice[] }
  | { kind: "saveAs"; text: string };

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function asChoice(v: unknown): EditChoice | undefined {
  if (!isObject(v)) return undefined;
  const title = typeof v.title === "string" ? v.title : typeof v.label === "string" ? v.label : undefined;
  if (!title || (!isObject(v.edit) && !isObject(v.command))) return undefined;
  const detail = typeof v.detail === "string" ? v.detail : typeof v.description === "string" ? v.description : undefined;
  return { title, detail, edit: v.edit, command: isObject(v.command) ? (v.command as EditChoice["command"]) : undefined };
}

/** How to show what the server answered to `command` (any JSON value). */
export function presentResult(command: ClientCommand, result: unknown): Presentation {
  const name = command.title;
  if (result === null || result === undefined) return { kind: "message", severity: "info", text: `${name}: done.` };
  if (typeof result === "string") {
    if (/^(file|untitled|vscode-[\w-]+):/.test(result)) return { kind: "open", uri: result, text: `${name}: opened ${basename(result)}.` };
    return { kind: "message", severity: "info", text: `${name}: ${result}` };
  }
  const list = Array.isArray(result)
    ? result
    : isObject(result)
      ? ((result.suggestions ?? result.choices ?? result.items ?? result.actions) as unknown)
      : undefined;
  if (Array.isArray(list)) {
    const choices = list.map(asChoice).filter((c): c is EditChoice => c !== undefined);
    const message = isObject(result) && typeof result.message === "string" ? result.message : undefined;
    if (choices.length) return { kind: "pick", text: message ?? `${name}: ${choices.length} suggestion(s)`, choices };
    // e.g. sass-lsp.suggestReorders without a policy: {ok: false, message: "…no policy checkpoint…", suggestions: []}
    const failed = isObject(result) && result.ok === false;
    if (list.length === 0) {
      return { kind: "message", severity: failed ? "warning" : "info", text: message ? `${name}: ${message}` : `${name}: nothing to suggest.` };
    }
  }
  if (isObject(result)) {
    const details = JSON.stringify(result, null, 2);
    // an untitled document: the server writes nothing; the user saves it first ("Save As…")
    if (result.verdict === "unsaved") return { kind: "saveAs", text: typeof result.message === "string" ? result.message : `${name}: save the file first.` };
    if (result.ok === false) {
      const n = typeof result.errors === "number" ? `${result.errors} error(s)` : "failed";
      const msg = typeof result.message === "string" ? result.message : `${name}: ${n}; see the Problems panel.`;
      return { kind: "message", severity: "error", text: msg, details };
    }
    const out = [result.cubin, result.cuasm, result.uri, result.output].find((v) => typeof v === "string") as string | undefined;
    const bytes = typeof result.bytes === "number" ? ` (${result.bytes} bytes)` : "";
    if (typeof result.message === "string") return { kind: "message", severity: "info", text: `${name}: ${result.message}`, reveal: out, details };
    if (out) return { kind: "message", severity: "info", text: `${name}: wrote ${basename(out)}${bytes}.`, reveal: out, details };
    return { kind: "message", severity: "info", text: `${name}: ${summarize(result)}`, details };
  }
  return { kind: "message", severity: "info", text: `${name}: ${String(result)}` };
}

/** The notice for a failed executeCommand: names the missing server feature when that is the cause. */
export function presentError(command: ClientCommand, message: string, advertised: readonly string[] | undefined): Presentation {
  const missing = /is not defined|not found|unknown command|MethodNotFound/i.test(message) ||
    (advertised !== undefined && command.server !== undefined && !advertised.includes(command.server));
  if (missing && command.server) {
    return {
      kind: "message",
      severity: "warning",
      text: `${command.title}: the language server does not provide '${command.server}' yet (server answer: ${message}).`,
    };
  }
  return { kind: "message", severity: "error", text: `${command.title} failed: ${message}` };
}

function basename(uri: string): string {
  const clean = uri.replace(/[?#].*$/, "");
  return decodeURIComponent(clean.slice(clean.lastIndexOf("/") + 1));
}

function summarize(obj: Record<string, unknown>): string {
  const parts = Object.entries(obj)
    .filter(([, v]) => v === null || ["string", "number", "boolean"].includes(typeof v))
    .slice(0, 6)
    .map(([k, v]) => `${k}=${String(v)}`);
  return parts.length ? parts.join(", ") : "done (see the output channel for the full answer).";
}
