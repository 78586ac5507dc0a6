// Builds the console's single-page app into dist/console-ui/ (served by src/console/app.ts). No CDN: every
// dependency is bundled; relative asset URLs so the app works under any path prefix.
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/console-ui', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1024,
  },
  logLevel: 'warn',
});
