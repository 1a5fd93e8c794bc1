/**
 * Writing a file on a box as one shell script, built here (pure) and sent by
 * the writeFile of remote/ssh-pool.ts and remote/remote-host.ts with the
 * content on stdin, never on a command line.
 */
import { shQuote } from "./shell";

/**
 * The script behind writeFile: content from stdin to a temporary file
 * beside the target (same filesystem, so the rename is atomic), mode set before
 * the rename, the temporary file removed on failure. $$ keeps two concurrent
 * writers of one path apart. umask 077 so the file is
 * never readable by others, not even between cat and chmod.
 */
export function writeFileScript(path: string, mode: number): string {
    if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw new Error(`invalid file mode ${mode}`);
    // Absolute only: a relative path would depend on the login directory, and a
    // leading "-" would read as an option to mv.
    if (!path.startsWith("/")) throw new Error(`writeFile needs an absolute path, got ${JSON.stringify(path)}`);
    const octal = mode.toString(8).padStart(4, "0");
    const p = shQuote(path);
    return (
        `umask 077; t=${p}.tmp.$$; ` +
        // mv onto an existing directory would move the file into it: refuse instead.
        `if cat > "$t" && chmod ${octal} "$t" && { [ ! -d ${p} ] || { printf '%s is a directory\\n' ${p} >&2; false; }; } && mv -f "$t" ${p}; ` +
        `then exit 0; else rc=$?; rm -f "$t"; exit $rc; fi`
    );
}
