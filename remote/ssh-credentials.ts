// The SSH credentials of a provider run, as an SshTarget's key fields:
// the secret key, a key file (owner-only, read at run time), or ssh-agent
// (SSH_AUTH_SOCK from the environment the engine started the provider in).
// See core/secrets/ssh-credentials.ts for the order and the rules.

import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { chooseSshCredentials, keyFileModeProblem } from "../core/secrets/ssh-credentials";
import type { SshTarget } from "./ssh-target";

export type SshCredentials = Pick<SshTarget, "privateKey" | "passphrase" | "agent">;

export interface SshCredentialConfig {
    /** The secret sglang-serve:sshPrivateKey. */
    sshPrivateKey?: string;
    sshPrivateKeyPassphrase?: string;
    /** sglang-serve:host.sshPrivateKeyPath. */
    sshPrivateKeyPath?: string;
}

function expandHome(p: string): string {
    return p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p;
}

export function loadSshCredentials(config: SshCredentialConfig, env: NodeJS.ProcessEnv = process.env): SshCredentials {
    const source = chooseSshCredentials({
        secretSet: config.sshPrivateKey !== undefined && config.sshPrivateKey !== "",
        keyPath: config.sshPrivateKeyPath,
        agentSocket: env.SSH_AUTH_SOCK,
    });
    switch (source.kind) {
        case "secret":
            return { privateKey: config.sshPrivateKey, passphrase: config.sshPrivateKeyPassphrase };
        case "key-file": {
            const resolved = expandHome(source.path);
            let mode: number;
            let key: string;
            try {
                mode = fs.statSync(resolved).mode;
                key = fs.readFileSync(resolved, "utf8");
            } catch (e) {
                throw new Error(`cannot read the SSH private key at ${resolved} (sglang-serve:host.sshPrivateKeyPath): ${(e as Error).message}`, { cause: e });
            }
            const problem = keyFileModeProblem(resolved, mode);
            if (problem) throw new Error(problem);
            return { privateKey: key, passphrase: config.sshPrivateKeyPassphrase };
        }
        case "agent":
            return { agent: source.socket };
        case "none":
            throw new Error(source.message);
        default: {
            const never: never = source;
            throw new Error(`unhandled credential source ${JSON.stringify(never)}`);
        }
    }
}
