// Where each part of one running Hugging Face mirror lives in its directory
// (the test's temporary one, or a lab's): the git repositories olah serves
// (its mirrors-path, `<type>/<org>/<name>` below it), olah's own cache and
// logs, the mirror's access log and its fault knobs.
import * as path from "path";

export interface MirrorDir {
    dir: string;
    /** olah's mirrors-path: models/<org>/<name> are the repositories' clones. */
    mirrors: string;
    /** olah's repos-path (its cache of the upstream; unused offline, but olah wants one). */
    olahCache: string;
    olahLogs: string;
    olahConfig: string;
    /** olah's stdout and stderr. */
    olahOut: string;
    /** The front's access log: one JSON line per request (method, url, range, status, bytes). */
    accessLog: string;
    /** The mirror's fault knobs (faults.ts), read at every download. */
    faultsFile: string;
}

export function mirrorDir(dir: string): MirrorDir {
    return {
        dir,
        mirrors: path.join(dir, "mirrors"),
        olahCache: path.join(dir, "olah", "cache"),
        olahLogs: path.join(dir, "olah", "logs"),
        olahConfig: path.join(dir, "olah", "olah.toml"),
        olahOut: path.join(dir, "olah", "olah.out"),
        accessLog: path.join(dir, "access.log"),
        faultsFile: path.join(dir, "faults.json"),
    };
}

/** The clone olah serves a model repository `org/name` from. */
export function modelRepoDir(d: MirrorDir, repoId: string): string {
    return path.join(d.mirrors, "models", ...repoId.split("/"));
}
