// Requests that arrive together for the same key (e.g. the reads of several
// services on one box during a refresh, which the engine runs in parallel)
// are served by one call with all of them: a DataLoader per key, batching
// what arrives within the window, caching nothing.
import DataLoader from "dataloader";

export class Coalescer<Req, Res> {
    private readonly loaders = new Map<string, DataLoader<Req, Res, Req>>();

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
        let loader = this.loaders.get(key);
        if (!loader) {
            loader = new DataLoader<Req, Res, Req>((reqs) => this.serveBatch(key, [...reqs]), {
                cache: false,
                batchScheduleFn: (run) => setTimeout(run, this.windowMs),
            });
            this.loaders.set(key, loader);
        }
        return loader.load(req);
    }

    private async serveBatch(key: string, reqs: Req[]): Promise<Res[]> {
        const results = await this.serve(key, reqs);
        if (results.length !== reqs.length) throw new Error(`coalesced call returned ${results.length} results for ${reqs.length} requests`);
        return results;
    }
}
