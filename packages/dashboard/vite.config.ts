import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `vite build` writes the static files the coordinator serves at `/` (dist/); `vite` serves the
// sources with the admin API proxied to a coordinator on 127.0.0.1:8080 (`pnpm start`).
const coordinator = process.env.CUSTODIAN_URL ?? 'http://127.0.0.1:8080';
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 2048 },
  server: {
    proxy: { '/admin': coordinator, '/api': coordinator, '/.well-known': coordinator },
  },
});
