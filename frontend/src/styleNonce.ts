import { setNonce } from 'get-nonce';

/**
 * The nonce the server issued with this page (src/gshare/api/csp.py). Its
 * Content-Security-Policy admits a <style> tag only with it: Mantine's tags get it through
 * `getStyleNonce`, and the scroll lock of modals (react-remove-scroll) through get-nonce.
 */
export function adoptStyleNonce(): string | undefined {
  const nonce = document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]')?.nonce || undefined;
  if (nonce) setNonce(nonce);
  return nonce;
}
