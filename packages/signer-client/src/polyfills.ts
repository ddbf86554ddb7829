/**
 * Node.js 20 polyfills, imported first by every entry point that runs libp2p: the `custodian`
 * binary (packages/cli `bin.ts`) and the phone simulator's `main.ts` (both via
 * `@custodian/signer-client/polyfills`), the signer's `main.ts`, and the indexes of
 * `@custodian/signer-client` and `@custodian/signer`.
 *
 * - `Promise.withResolvers` (ES2024) is used by libp2p 3 but only ships natively from Node.js 22.
 *
 * Removable when Node.js 20 support ends (the root package.json `engines` field).
 */
declare global {
  interface PromiseConstructor {
    withResolvers<T>(): {
      promise: Promise<T>;
      resolve: (value: T | PromiseLike<T>) => void;
      reject: (reason?: unknown) => void;
    };
  }
}

if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

export {};
