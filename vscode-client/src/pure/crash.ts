// Pure: when to restart a crashed server. At most `maxRestarts` restarts within `windowMs`; after that
// the client stops and asks the user (a crash loop would otherwise spin for ever).

export interface CrashDecision {
  restart: boolean;
  recentCrashes: number;
}

export class RestartPolicy {
  private crashes: number[] = [];

  constructor(readonly maxRestarts = 5, readonly windowMs = 3 * 60_000) {}

  onCrash(nowMs: number): CrashDecision {
    this.crashes = this.crashes.filter((t) => nowMs - t < this.windowMs);
    this.crashes.push(nowMs);
    return { restart: this.crashes.length <= this.maxRestarts, recentCrashes: this.crashes.length };
  }

  reset(): void {
    this.crashes = [];
  }
}
