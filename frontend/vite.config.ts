import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

const backend = 'http://localhost:8000';

export default defineConfig({
  plugins: [react()],
  // The server replaces this with a fresh nonce per page (src/gshare/api/csp.py).
  html: { cspNonce: 'GSHARE_CSP_NONCE' },
  server: {
    proxy: {
      '/api': backend,
      '/healthz': backend,
    },
  },
  build: {
    outDir: 'dist',
    rolldownOptions: {
      output: {
        // Libraries change less often than the console; cache them apart.
        codeSplitting: {
          groups: [
            { name: 'mantine', test: /node_modules[\\/](@mantine[\\/](core|hooks)|@floating-ui)[\\/]/, priority: 2 },
            { name: 'react', test: /node_modules[\\/](react|react-dom|scheduler|react-router)[\\/]/, priority: 2 },
            // The charting libraries stay out: only wallet pages load them, in a chunk of their own.
            {
              name: 'vendor',
              test: /node_modules[\\/](?!@mantine[\\/]charts|recharts|victory-vendor|d3-|@reduxjs|redux|react-redux|immer|reselect|decimal\.js-light|es-toolkit)/,
              priority: 1,
            },
          ],
        },
      },
    },
  },
  test: {
    environment: 'jsdom',
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    testTimeout: 30_000,
    // One worker per core (Vitest leaves one core idle by default: on a 2-core CI machine,
    // half the machine).
    maxWorkers: '100%',
  },
});
