// Pure: the status-bar item's text and tooltip.

export interface ServerStatus {
  arch?: string; // from the server's `sass-lsp/status` notification, if it sends one
  gpu?: { available: boolean; device?: string; reason?: string | null }; // sass-lsp.gpuDevice, once probed
}

export interface StatusInput {
  fileArch?: { arch: string; source: string };
  archOverride?: string; // sass-lsp.arch
  server?: ServerStatus;
  serverState: "starting" | "running" | "stopped" | "failed";
}

export function statusText(s: StatusInput): { text: string; tooltip: string } {
  const arch = s.archOverride || s.server?.arch || s.fileArch?.arch;
  const archWhy = s.archOverride
    ? "setting sass-lsp.arch"
    : s.server?.arch
      ? "reported by the server"
      : s.fileArch
        ? `read from ${s.fileArch.source}`
        : "not found in the file";
  let gpu: string;
  let gpuWhy: string;
  if (!s.server?.gpu) {
    gpu = "GPU ?";
    gpuWhy = "GPU (Time on GPU, Optimize schedule): not checked yet";
  } else if (s.server.gpu.available) {
    gpu = "GPU ✓";
    gpuWhy = `GPU (Time on GPU, Optimize schedule): ${s.server.gpu.device ?? "available"} answers`;
  } else {
    gpu = "GPU ✗";
    gpuWhy = `No GPU for Time on GPU and Optimize schedule${s.server.gpu.reason ? `: ${s.server.gpu.reason}` : ""}`;
  }
  const icon = s.serverState === "running" ? "$(chip)" : s.serverState === "starting" ? "$(sync~spin)" : "$(error)";
  const state = { starting: "starting", running: "running", stopped: "stopped", failed: "failed to start" }[s.serverState];
  return {
    text: `${icon} ${arch ?? "sm_?"} · ${gpu}`,
    tooltip: `SASS language server: ${state}\nArch: ${arch ?? "unknown"} (${archWhy})\n${gpuWhy}\nClick to show the server log.`,
  };
}
