/**
 * Everything a server command line says, as typed fields: what
 * core/sglang/args.ts renders a command line from and parses one back into,
 * and what the settings table (core/sglang/settings.ts) reads a setting's
 * value from.
 */
export type Launcher = "serve" | "launch_server";

export interface ArgvSpeculative {
    algorithm?: string;
    draftModelPath?: string;
    numSteps?: number;
    eagleTopk?: number;
    numDraftTokens?: number;
}

/** Everything a server command line says, as typed fields. Optional fields are absent when the flag is. */
export interface ArgvFields {
    launcher: Launcher;
    /** argv[0]: `<venv>/bin/sglang` for serve, the python for launch_server. */
    executable: string;
    modelPath: string;
    servedName?: string;
    tensorParallelSize?: number;
    listenHost?: string;
    port?: number;
    memFractionStatic?: number;
    maxRunningRequests?: number;
    speculative?: ArgvSpeculative;
    mambaSchedulerStrategy?: string;
    /** The flag that carries mambaSchedulerStrategy: the release's name for it (core/sglang/settings.ts), or the one a unit has. */
    mambaStrategyFlag?: string;
    disableRadixCache: boolean;
    /** `--config <file>`: the 0600 YAML file SGLang reads the API key from. */
    configFile?: string;
    /** True when `--api-key` is on the command line (a hand edit, or a unit of an older version: the key shows in /proc/<pid>/cmdline). */
    apiKeyInline: boolean;
    /**
     * The tokens the typed config does not own, in order and exactly as the
     * command line has them (core/sglang/extra-args.ts): `--flag`, `--flag=value`, or
     * `--flag` and its value tokens. Not normalised, so a unit reads back as
     * the extraArgs it was rendered from, whichever form they used.
     */
    extraArgs: string[];
}
