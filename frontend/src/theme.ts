import { Combobox, createTheme } from '@mantine/core';

export const theme = createTheme({
  primaryColor: 'blue',
  defaultRadius: 'md',
  components: {
    // A closed dropdown would otherwise stay in the DOM labelled like its
    // input, so a lookup by the field's label would find two elements.
    Combobox: Combobox.extend({ defaultProps: { keepMounted: false } }),
  },
});
