/** Progress and notices from the providers show in `pulumi up`'s output. */
export function say(message: string): void {
    console.log(message);
}
