/** Success and failure told as toasts (`@mantine/notifications`), the same way on every screen. */
import { notifications } from '@mantine/notifications';
import { IconCheck, IconX } from '@tabler/icons-react';

/** Something done: a green toast that goes by itself. */
export function notifyDone(message: string) {
  notifications.show({ color: 'green', message, icon: <IconCheck size={18} aria-hidden />, autoClose: 6000 });
}

/** Something that failed where no form shows it: a red toast that stays until dismissed. */
export function notifyFailed(title: string, message: string) {
  notifications.show({ color: 'red', title, message, icon: <IconX size={18} aria-hidden />, autoClose: false });
}
