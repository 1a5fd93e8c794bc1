/** What one look at a server sees: /health's answer and /server_info's body (undefined when it has none). */
export interface Look {
    healthy: boolean;
    body: unknown;
}

/**
 * One look at a server per refresh: the service's and the readiness check's
 * refreshes of one engine run read the same server at the same moment (the
 * engine runs them in parallel). A look in flight is shared; once it has
 * answered the next one is fresh. Held by the run (providers/provider-run.ts).
 */
export class ServerLooks {
    private readonly inFlight = new Map<string, Promise<Look>>();

    share(key: string, look: () => Promise<Look>): Promise<Look> {
        const running = this.inFlight.get(key);
        if (running) return running;
        const started = look().finally(() => this.inFlight.delete(key));
        this.inFlight.set(key, started);
        return started;
    }
}
