// Pure: the `sass-lsp` configuration section as the server receives it. The server's Settings dataclass
// (sass_lsp/ide/settings.py) is the reference; keys used only by this client are removed, and empty
// strings the settings UI stores for "unset" become null.

export const CLIENT_ONLY_KEYS = ["pythonPath", "serverArgs", "trace"] as const;
const EMPTY_IS_NULL = ["arch", "policyModelPath"];

export function toServerSettings(raw: unknown): Record<string, unknown> | null {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if ((CLIENT_ONLY_KEYS as readonly string[]).includes(key)) continue;
    if (typeof value === "function") continue;
    out[key] = EMPTY_IS_NULL.includes(key) && value === "" ? null : value;
  }
  return out;
}
