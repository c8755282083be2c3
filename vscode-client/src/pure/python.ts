// Pure: which Python runs the server, how it is checked, and what to tell the user when it can't.

export interface PythonChoice {
  command: string;
  source: "setting" | "python-extension" | "default";
}

/** `sass-lsp.pythonPath` if set, else the Python extension's selected interpreter, else `python3`. */
export function choosePython(configured: string | undefined, fromPythonExtension: string | undefined): PythonChoice {
  if (configured && configured.trim()) return { command: configured.trim(), source: "setting" };
  if (fromPythonExtension && fromPythonExtension.trim()) return { command: fromPythonExtension.trim(), source: "python-extension" };
  return { command: "python3", source: "default" };
}

/** Arguments for the import check: everything the server needs at start-up, and its version. */
export const IMPORT_CHECK_ARGS = [
  "-c",
  "import sass_lsp, sass_lsp.server, pygls, lsprotocol; print(getattr(sass_lsp, '__version__', '?'))",
];

export interface InstallAdvice {
  message: string;
  installCommand: string;
}

/** Text for the "server cannot start" notification, from the failed import check's output. */
export function installAdvice(python: string, output: string): InstallAdvice {
  const lines = output.trim().split(/\r?\n/).filter((l) => l.trim());
  const last = lines.length ? lines[lines.length - 1].trim() : "no output";
  const missing = /No module named '([^']+)'/.exec(output)?.[1];
  const quoted = /\s/.test(python) ? `"${python}"` : python;
  let what: string;
  if (/ENOENT|not found|No such file/i.test(output) && !missing) {
    what = `The Python interpreter '${python}' was not found.`;
  } else if (missing) {
    what = `'${python}' cannot import '${missing}'.`;
  } else {
    what = `'${python}' cannot start the SASS language server (${last}).`;
  }
  const installCommand = missing === "pygls" || missing === "lsprotocol"
    ? `${quoted} -m pip install pygls lsprotocol`
    : `${quoted} -m pip install -e <path to your sass-lsp checkout> pygls lsprotocol`;
  return {
    message: `${what} Install the server into that interpreter (${installCommand}) or set 'sass-lsp.pythonPath' to a Python that has it.`,
    installCommand,
  };
}
