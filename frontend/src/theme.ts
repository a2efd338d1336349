import { Combobox, createTheme, NumberInput } from '@mantine/core';

export const theme = createTheme({
  primaryColor: 'blue',
  defaultRadius: 'md',
  components: {
    // A closed dropdown would otherwise stay in the DOM labelled like its
    // input, so a lookup by the field's label would find two elements.
    Combobox: Combobox.extend({ defaultProps: { keepMounted: false } }),
    // A number out of range stays as typed, for its form to refuse with the limits: clamping
    // it on blur would send another number than the one the person typed.
    NumberInput: NumberInput.extend({ defaultProps: { clampBehavior: 'none' } }),
  },
});
