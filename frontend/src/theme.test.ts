import { DEFAULT_THEME, mergeMantineTheme } from '@mantine/core';
import { describe, expect, it } from 'vitest';
import { contrast, cssVariablesResolver, PALEST_BACKGROUND, theme } from './theme';

describe('colour contrast', () => {
  const resolved = mergeMantineTheme(DEFAULT_THEME, theme);
  const light = cssVariablesResolver(resolved).light;

  it('draws text in any theme colour at 4.5:1 or more on white and on striped rows', () => {
    for (const name of Object.keys(resolved.colors)) {
      const text = light[`--mantine-color-${name}-text`];
      expect(text, name).toBeTruthy();
      expect(contrast(text, '#ffffff'), name).toBeGreaterThanOrEqual(4.5);
      expect(contrast(text, PALEST_BACKGROUND), name).toBeGreaterThanOrEqual(4.5);
    }
  });

  it('keeps a colour as light as it can: red stays at a shade the palette has', () => {
    expect(light['--mantine-color-red-text']).toBe(resolved.colors.red[9]);
    expect(contrast('#000000', '#ffffff')).toBeCloseTo(21, 5);
  });
});
