// Requests that arrive together for the same key (e.g. the reads of several
// services on one box during a refresh, which the engine runs in parallel)
// are served by one call with all of them.

export class Coalescer<Req, Res> {
  private readonly pending = new Map<string, Array<{ req: Req; resolve(r: Res): void; reject(e: unknown): void }>>();

  /**
   * @param windowMs how long the first request of a key waits for others (the engine's parallel
   *   reads arrive within a few ms of each other)
   * @param serve one call for a key's requests; returns one result per request, in order
   */
  constructor(
    private readonly windowMs: number,
    private readonly serve: (key: string, reqs: Req[]) => Promise<Res[]>,
  ) {}

  request(key: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let batch = this.pending.get(key);
      if (!batch) {
        batch = [];
        this.pending.set(key, batch);
        setTimeout(() => this.flush(key), this.windowMs);
      }
      batch.push({ req, resolve, reject });
    });
  }

  private flush(key: string): void {
    const batch = this.pending.get(key) ?? [];
    this.pending.delete(key);
    this.serve(
      key,
      batch.map((b) => b.req),
    ).then(
      (results) => {
        if (results.length !== batch.length) throw new Error(`coalesced call returned ${results.length} results for ${batch.length} requests`);
        batch.forEach((b, i) => b.resolve(results[i]!));
      },
      (e) => batch.forEach((b) => b.reject(e)),
    ).catch((e) => batch.forEach((b) => b.reject(e)));
  }
}
