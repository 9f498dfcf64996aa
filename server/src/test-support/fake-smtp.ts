// A stand-in for a mail relay on 127.0.0.1: enough SMTP for nodemailer to hand over a message.
import { createServer, type Server } from 'node:net'

interface Teardown {
  teardown(fn: () => unknown): void
}

/** A small SMTP server on 127.0.0.1 that records messages, or refuses recipients. */
export async function fakeSmtp(t: Teardown, refuse = false): Promise<{ port: number; messages: string[] }> {
  const messages: string[] = []
  const server: Server = createServer((socket) => {
    let data: string | null = null
    let buffer = ''
    socket.write('220 fake.smtp ESMTP\r\n')
    socket.on('data', (chunk) => {
      buffer += chunk.toString()
      let index: number
      while ((index = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, index)
        buffer = buffer.slice(index + 2)
        if (data !== null) {
          if (line === '.') {
            messages.push(data)
            data = null
            socket.write('250 2.0.0 queued\r\n')
          } else data += `${line}\n`
          continue
        }
        const verb = line.slice(0, 4).toUpperCase()
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250-fake.smtp\r\n250 8BITMIME\r\n')
        else if (verb === 'MAIL') socket.write('250 2.1.0 ok\r\n')
        else if (verb === 'RCPT') socket.write(refuse ? '550 5.1.1 mailbox unavailable\r\n' : '250 2.1.5 ok\r\n')
        else if (verb === 'DATA') {
          data = ''
          socket.write('354 go ahead\r\n')
        } else if (verb === 'QUIT') socket.end('221 bye\r\n')
        else if (verb === 'RSET' || verb === 'NOOP') socket.write('250 ok\r\n')
        else socket.write('502 5.5.2 not implemented\r\n')
      }
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const address = server.address()
  return { port: typeof address === 'object' && address ? address.port : 0, messages }
}
