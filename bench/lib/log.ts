/** A progress line on stderr, stamped with the time of day (the table and the results go to stdout). */
export function log(message: string): void {
    const t = new Date().toISOString().slice(11, 19);
    process.stderr.write(`[bench ${t}] ${message}\n`);
}
