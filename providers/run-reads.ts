import { sha256 } from "../core/digest";
import type { RemoteHost } from "../remote/remote-host";

/**
 * Where a command goes, as a run tells boxes apart: the box (its address,
 * and `pct exec` into which container) and the credentials it is reached
 * with. Reads with other credentials or for another box are never shared.
 */
export function boxKey(remote: RemoteHost): string {
    const t = remote.target;
    return `${remote.describe()} ${sha256(`${t.privateKey ?? ""}\0${t.passphrase ?? ""}\0${t.agent ?? ""}\0${t.hostKey}`)}`;
}

/**
 * What an engine run reads of a box once and shares (held by the run,
 * providers/provider-run.ts): the refresh, check and the rollout, of every
 * resource the run serves, get one read's answer, in flight or done, by
 * the read's key (the box, boxKey, and what it reads). A read that fails,
 * or whose answer `keep` refuses (an answer that says it could not read),
 * is not kept: the next asks the box again. `fresh`: the stack changed what
 * was read (a venv it staged): read again, and keep that.
 */
export class RunReads {
    private readonly kept = new Map<string, Promise<unknown>>();

    once<T>(key: string, read: () => Promise<T>, opts: { keep?: (answer: T) => boolean; fresh?: boolean } = {}): Promise<T> {
        const earlier = opts.fresh ? undefined : this.kept.get(key);
        if (earlier) return earlier as Promise<T>;
        const started = read();
        this.kept.set(key, started);
        const drop = () => {
            if (this.kept.get(key) === started) this.kept.delete(key);
        };
        started.then((answer) => {
            if (opts.keep && !opts.keep(answer)) drop();
        }, drop);
        return started;
    }
}
