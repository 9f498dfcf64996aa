// The page tests' mail: a server whose mail goes through a real relay (the fake SMTP server), and
// the links of the messages it caught.
import { join } from 'node:path'
import { fakeSmtp } from '@club/server/testing'
import { TestServer, freePort, tempDir, type Teardown } from './support.js'

/** A message's text with its quoted-printable soft breaks and escaped `=` undone. */
export const decoded = (message: string) => message.replace(/=\n/g, '').replace(/=3D/g, '=')

/** The links to `page` (`password-reset`) of the messages the relay received, in order. */
export function mailedLinks(messages: string[], page: string): string[] {
  const link = new RegExp(`https?://\\S+/${page}\\?token=[A-Za-z0-9_-]+`, 'g')
  return messages.flatMap((message) => [...decoded(message).matchAll(link)].map((m) => m[0]))
}

/** A started server (stopped on teardown) mailing through the relay, its links built from its own address. */
export async function serverWithMailRelay(t: Teardown) {
  const smtp = await fakeSmtp(t)
  const port = await freePort()
  const server = new TestServer(
    join(tempDir(t), 'server'),
    { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Club <club@example.org>', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` },
    port
  )
  await server.start()
  t.teardown(() => server.stop())
  return { server, smtp }
}
