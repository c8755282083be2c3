// The VS Code side of sass-lsp. It holds no SASS logic: it starts the Python language server, forwards
// settings and commands to it, and shows what it answers. Everything testable without VS Code lives in
// ./pure (unit-tested with node --test).

import { execFile } from "node:child_process";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  TransportKind,
  type WorkspaceEdit as LspWorkspaceEdit,
} from "vscode-languageclient/node";
import { archFromText, type ArchGuess } from "./pure/arch";
import { COMMANDS, type ClientCommand, type EditChoice, type Presentation, presentError, presentResult, serverArguments } from "./pure/commands";
import { RestartPolicy } from "./pure/crash";
import { choosePython, IMPORT_CHECK_ARGS, installAdvice } from "./pure/python";
import { toServerSettings } from "./pure/settings";
import { type ServerStatus, statusText } from "./pure/status";

const SECTION = "sass-lsp";
const LANGUAGE = "cuasm";
const STATUS_NOTIFICATION = "sass-lsp/status";

let client: LanguageClient | undefined;
let log: vscode.OutputChannel;
let traceLog: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
let serverState: "starting" | "running" | "stopped" | "failed" = "stopped";
let serverStatus: ServerStatus | undefined;
const restartPolicy = new RestartPolicy();
let starting: Promise<void> | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  log = vscode.window.createOutputChannel("SASS Language Server");
  traceLog = vscode.window.createOutputChannel("SASS Language Server Trace");
  statusItem = vscode.window.createStatusBarItem("sass-lsp.status", vscode.StatusBarAlignment.Right, 100);
  statusItem.name = "SASS";
  statusItem.command = "cuasm.showOutput";
  context.subscriptions.push(log, traceLog, statusItem);

  for (const command of COMMANDS) {
    context.subscriptions.push(vscode.commands.registerCommand(command.id, (arg?: unknown) => runCommand(command, arg)));
  }
  context.subscriptions.push(
    vscode.window.registerCustomEditorProvider("sass-lsp.cubin", new CubinEditorProvider(), {
      supportsMultipleEditorsPerDocument: false,
    }),
    vscode.window.onDidChangeActiveTextEditor(() => updateStatus()),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === vscode.window.activeTextEditor?.document) updateStatus();
    }),
    vscode.workspace.onDidChangeConfiguration(onConfigurationChanged),
    { dispose: () => void stopClient() },
  );
  updateStatus();
  // Start in the background: activation must not wait for Python.
  void startClient(context);
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

// ------------------------------------------------------------------------------------------ server

async function startClient(context?: vscode.ExtensionContext): Promise<void> {
  if (starting) return starting;
  starting = (async () => {
    setState("starting");
    const config = vscode.workspace.getConfiguration(SECTION);
    const resource = vscode.window.activeTextEditor?.document.uri;
    const python = choosePython(config.get<string>("pythonPath"), await pythonFromExtension(resource));
    const args = config.get<string[]>("serverArgs") ?? ["-m", "sass_lsp.server"];
    log.appendLine(`[client] python: ${python.command} (from ${python.source}); server: ${[python.command, ...args].join(" ")}`);

    const check = await runProcess(python.command, IMPORT_CHECK_ARGS, 60_000);
    if (check.code !== 0) {
      log.appendLine(`[client] import check failed (exit ${check.code}):\n${check.output}`);
      setState("failed");
      const advice = installAdvice(python.command, check.output);
      void vscode.window
        .showErrorMessage(`SASS: ${advice.message}`, "Copy install command", "Open settings", "Show log")
        .then(async (choice) => {
          if (choice === "Copy install command") await vscode.env.clipboard.writeText(advice.installCommand);
          if (choice === "Open settings") await vscode.commands.executeCommand("workbench.action.openSettings", "sass-lsp.pythonPath");
          if (choice === "Show log") log.show(true);
        });
      return;
    }
    log.appendLine(`[client] sass_lsp ${check.output.trim()} is importable`);

    const serverOptions: ServerOptions = {
      command: python.command,
      args,
      transport: TransportKind.stdio,
      options: { env: { ...process.env, PYTHONUNBUFFERED: "1" } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ language: LANGUAGE }],
      outputChannel: log,
      traceOutputChannel: traceLog,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: serverSettings(),
      errorHandler: {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: () => {
          const decision = restartPolicy.onCrash(Date.now());
          if (decision.restart) {
            log.appendLine(`[client] server stopped unexpectedly; restarting (crash ${decision.recentCrashes})`);
            void vscode.window.showWarningMessage(
              `SASS language server stopped unexpectedly; restarting it (${decision.recentCrashes} crash(es) in the last 3 minutes).`,
            );
            return { action: CloseAction.Restart, handled: true };
          }
          setState("failed");
          void vscode.window
            .showErrorMessage(
              `SASS language server crashed ${decision.recentCrashes} times in 3 minutes and will not be restarted automatically.`,
              "Restart",
              "Show log",
            )
            .then((choice) => {
              if (choice === "Restart") void restartClient();
              if (choice === "Show log") log.show(true);
            });
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        workspace: {
          // The server pulls the `sass-lsp` section; drop the keys only this client uses.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return result.map((value, i) => (params.items[i]?.section === SECTION ? toServerSettings(value) : value));
          },
        },
      },
    };
    client = new LanguageClient(SECTION, "SASS Language Server", serverOptions, clientOptions);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) setState("running");
      else if (e.newState === State.Starting) setState("starting");
      else if (serverState !== "failed") setState("stopped");
    });
    if (context) context.subscriptions.push(client);
    try {
      await client.start();
      client.onNotification(STATUS_NOTIFICATION, (params: ServerStatus) => {
        serverStatus = params;
        updateStatus();
      });
      const commands = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
      log.appendLine(`[client] server started; it provides commands: ${commands.join(", ") || "(none)"}`);
    } catch (err) {
      setState("failed");
      log.appendLine(`[client] server failed to start: ${String(err)}`);
      void vscode.window.showErrorMessage(`SASS language server failed to start: ${String(err)}`, "Show log").then((c) => {
        if (c) log.show(true);
      });
    }
  })().finally(() => {
    starting = undefined;
  });
  return starting;
}

async function stopClient(): Promise<void> {
  const current = client;
  client = undefined;
  if (current) {
    try {
      await current.stop(5000);
    } catch (err) {
      log.appendLine(`[client] stop: ${String(err)}`);
    }
  }
  setState("stopped");
}

async function restartClient(): Promise<void> {
  log.appendLine("[client] restarting the server");
  await starting;
  await stopClient();
  restartPolicy.reset();
  serverStatus = undefined;
  await startClient();
}

function serverSettings(): Record<string, unknown> | null {
  const config = vscode.workspace.getConfiguration(SECTION);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(config)) {
    const value = config.get(key);
    if (typeof value !== "function") raw[key] = value;
  }
  return toServerSettings(JSON.parse(JSON.stringify(raw)));
}

function onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
  if (e.affectsConfiguration(`${SECTION}.pythonPath`) || e.affectsConfiguration(`${SECTION}.serverArgs`)) {
    void restartClient();
    return;
  }
  if (e.affectsConfiguration(SECTION)) {
    updateStatus();
    if (client?.isRunning()) {
      void client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: serverSettings() } });
    }
  }
}

async function pythonFromExtension(resource?: vscode.Uri): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) return undefined;
  try {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the Python extension's API is untyped here
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const active = api?.environments?.getActiveEnvironmentPath?.(resource);
    if (active?.path) return String(active.path);
    const details = api?.settings?.getExecutionDetails?.(resource);
    if (Array.isArray(details?.execCommand) && details.execCommand.length) return String(details.execCommand[0]);
  } catch (err) {
    log.appendLine(`[client] Python extension API failed: ${String(err)}`);
  }
  return undefined;
}

function runProcess(command: string, args: string[], timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, env: process.env }, (error, stdout, stderr) => {
      const output = `${stdout ?? ""}${stderr ?? ""}${error && !stderr ? String(error.message) : ""}`;
      const code = error ? (typeof error.code === "number" ? error.code : 127) : 0;
      resolve({ code, output });
    });
  });
}

// ------------------------------------------------------------------------------------------ status bar

function setState(state: typeof serverState): void {
  serverState = state;
  updateStatus();
}

function updateStatus(): void {
  if (!statusItem) return;
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc || doc.languageId !== LANGUAGE) {
    statusItem.hide();
    return;
  }
  const config = vscode.workspace.getConfiguration(SECTION);
  const fileArch: ArchGuess | undefined = archFromText(doc.getText());
  const { text, tooltip } = statusText({
    fileArch,
    archOverride: config.get<string>("arch") || undefined,
    server: serverStatus,
    serverState,
  });
  statusItem.text = text;
  statusItem.tooltip = tooltip;
  statusItem.show();
}

// ------------------------------------------------------------------------------------------ commands

async function runCommand(command: ClientCommand, arg?: unknown): Promise<unknown> {
  if (command.id === "cuasm.restartServer") return restartClient();
  if (command.id === "cuasm.showOutput") return log.show(true);
  if (!command.server) return undefined;

  const target = await commandTarget(command, arg);
  if (!target) {
    void vscode.window.showWarningMessage(
      command.target === "cubin" ? `${command.title}: choose a .cubin file.` : `${command.title}: open a .cuasm file first.`,
    );
    return undefined;
  }
  if (starting) await starting;
  if (!client?.isRunning()) {
    void vscode.window.showErrorMessage(`${command.title}: the SASS language server is not running.`, "Show log").then((c) => {
      if (c) log.show(true);
    });
    return undefined;
  }
  const args = serverArguments(command, target.uri.toString());
  log.appendLine(`[client] ${command.server} ${JSON.stringify(args)}`);
  let presentation: Presentation;
  try {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: `SASS: ${command.title}` },
      () => client!.sendRequest(ExecuteCommandRequest.type, { command: command.server!, arguments: args }),
    );
    log.appendLine(`[client] ${command.server} answered: ${JSON.stringify(result)}`);
    presentation = presentResult(command, result);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.appendLine(`[client] ${command.server} failed: ${message}`);
    presentation = presentError(command, message, client.initializeResult?.capabilities.executeCommandProvider?.commands);
  }
  await present(presentation);
  return presentation;
}

async function commandTarget(command: ClientCommand, arg: unknown): Promise<{ uri: vscode.Uri } | undefined> {
  const fromArg = arg instanceof vscode.Uri ? arg : typeof arg === "string" ? vscode.Uri.parse(arg) : undefined;
  if (command.target === "cubin") {
    if (fromArg) return { uri: fromArg };
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (tab instanceof vscode.TabInputCustom && tab.uri.path.endsWith(".cubin")) return { uri: tab.uri };
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { "CUDA binary": ["cubin"] } });
    return picked?.[0] ? { uri: picked[0] } : undefined;
  }
  let doc: vscode.TextDocument | undefined;
  if (fromArg) doc = await vscode.workspace.openTextDocument(fromArg); // didOpen reaches the server
  else if (vscode.window.activeTextEditor?.document.languageId === LANGUAGE) doc = vscode.window.activeTextEditor.document;
  return doc ? { uri: doc.uri } : undefined;
}

async function present(p: Presentation): Promise<void> {
  if (p.kind === "saveAs") {
    const choice = await vscode.window.showWarningMessage(`SASS: ${p.text}`, "Save As…");
    if (choice) await vscode.commands.executeCommand("workbench.action.files.saveAs");
    return;
  }
  if (p.kind === "open") {
    await vscode.window.showTextDocument(vscode.Uri.parse(p.uri), { preview: false });
    return;
  }
  if (p.kind === "pick") {
    const items = p.choices.map((choice) => ({ label: choice.title, detail: choice.detail, choice }));
    const picked = await vscode.window.showQuickPick(items, { title: p.text, placeHolder: "Choose one to apply" });
    if (picked) await applyChoice(picked.choice);
    return;
  }
  const buttons = [p.reveal ? "Open" : undefined, p.details ? "Show details" : undefined].filter((b): b is string => !!b);
  const show =
    p.severity === "error"
      ? vscode.window.showErrorMessage
      : p.severity === "warning"
        ? vscode.window.showWarningMessage
        : vscode.window.showInformationMessage;
  const choice = await show(`SASS: ${p.text}`, ...buttons);
  if (choice === "Open" && p.reveal) await vscode.commands.executeCommand("revealInExplorer", vscode.Uri.parse(p.reveal));
  if (choice === "Show details" && p.details) {
    log.appendLine(p.details);
    log.show(true);
  }
}

async function applyChoice(choice: EditChoice): Promise<void> {
  if (!client) return;
  if (choice.edit) {
    const edit = await client.protocol2CodeConverter.asWorkspaceEdit(choice.edit as LspWorkspaceEdit);
    const ok = await vscode.workspace.applyEdit(edit);
    if (!ok) void vscode.window.showErrorMessage(`SASS: could not apply '${choice.title}' (the file changed?).`);
  }
  if (choice.command) {
    await client.sendRequest(ExecuteCommandRequest.type, { command: choice.command.command, arguments: choice.command.arguments });
  }
}

// ------------------------------------------------------------------------------------------ .cubin files

/** Opening a .cubin shows a small page with a "Disassemble" button, and a notification that offers the same. */
class CubinEditorProvider implements vscode.CustomReadonlyEditorProvider {
  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    const name = path.posix.basename(document.uri.path);
    let size = "";
    try {
      size = `${(await vscode.workspace.fs.stat(document.uri)).size} bytes`;
    } catch {
      size = "size unknown";
    }
    const nonce = Math.random().toString(36).slice(2);
    panel.webview.options = { enableScripts: true };
    panel.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';">
</head><body style="font-family: var(--vscode-font-family); padding: 1em">
<h2>${escapeHtml(name)}</h2><p>CUDA binary (cubin), ${size}.</p>
<p><button id="d" style="padding: 0.4em 1em">Disassemble to .cuasm</button></p>
<script nonce="${nonce}">const vscode = acquireVsCodeApi();
document.getElementById('d').addEventListener('click', () => vscode.postMessage('disassemble'));</script>
</body></html>`;
    panel.webview.onDidReceiveMessage((message) => {
      if (message === "disassemble") void vscode.commands.executeCommand("cuasm.disassemble", document.uri);
    });
    void vscode.window.showInformationMessage(`${name} is a CUDA binary. Disassemble it to .cuasm?`, "Disassemble").then((choice) => {
      if (choice === "Disassemble") void vscode.commands.executeCommand("cuasm.disassemble", document.uri);
    });
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);
}
