/**
 * A command line as the preview and drift reports show it: the command
 * (program and subcommand) and one entry per `--flag`, so a changed flag
 * shows as exactly that flag. Boolean flags map to "true".
 */
export interface FlagMap {
    command: string[];
    flags: Record<string, string>;
}

export function flagMap(argv: readonly string[]): FlagMap {
    const command: string[] = [];
    const flags: Record<string, string> = {};
    let i = 0;
    while (i < argv.length && !argv[i].startsWith("--")) {
        command.push(argv[i]);
        i++;
    }
    while (i < argv.length) {
        const arg = argv[i];
        const eq = arg.indexOf("=");
        if (eq > 0) {
            flags[arg.slice(0, eq)] = arg.slice(eq + 1);
            i++;
        } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
            flags[arg] = argv[i + 1];
            i += 2;
        } else {
            flags[arg] = "true";
            i++;
        }
    }
    return { command, flags };
}
