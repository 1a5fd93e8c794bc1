/**
 * A command line as the preview and drift reports show it: the command
 * (program and subcommand) and one entry per `--flag`, so a changed flag
 * shows as exactly that flag. Boolean flags map to "true"; a flag with one
 * value maps to it; a flag with several values (`--cuda-graph-bs 1 2 4 8`)
 * to them joined by spaces. A value that has whitespace or starts with a
 * double quote is shown as a JSON string, so `--x "a b"` and `--x a b` show
 * differently (values without either show as before multi-value flags). A repeated flag shows its last occurrence,
 * the one argparse keeps.
 */
export interface FlagMap {
    command: string[];
    flags: Record<string, string>;
}

function shownValue(value: string): string {
    return /\s/.test(value) || value.startsWith('"') ? JSON.stringify(value) : value;
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
        i++;
        const eq = arg.indexOf("=");
        if (eq > 0) {
            flags[arg.slice(0, eq)] = shownValue(arg.slice(eq + 1));
            continue;
        }
        const values: string[] = [];
        while (i < argv.length && !argv[i].startsWith("--")) values.push(argv[i++]);
        flags[arg] = values.length === 0 ? "true" : values.map(shownValue).join(" ");
    }
    return { command, flags };
}
