// Outgoing mail: one interface, a development mailer that writes messages to the log, and an SMTP
// mailer (nodemailer). Every message also leaves a record in the outbox table, without its body,
// because a body may carry a single-use link.
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Transporter } from 'nodemailer'
import type { Clock } from '../clock.js'
import type { DbOrTx } from '../db/database.js'

export interface MailMessage {
  to: string
  subject: string
  text: string
  /** An HTML alternative to the text (the daily summary). */
  html?: string
}

export interface Mailer {
  send(message: MailMessage): Promise<void>
  close(): Promise<void>
}

/** Development only: prints each message, links included, so a developer can follow them. */
export class LogMailer implements Mailer {
  constructor(private readonly log: FastifyBaseLogger) {
    log.warn('SMTP_URL is not set: e-mail is written to the log, links included. This is for development only')
  }

  async send(message: MailMessage): Promise<void> {
    this.log.info({ mail: { to: message.to, subject: message.subject, body: message.text } }, 'mail (development log mailer)')
  }

  async close(): Promise<void> {}
}

export class SmtpMailer implements Mailer {
  private transport: Transporter | undefined

  constructor(private readonly url: string, private readonly from: string) {}

  async send(message: MailMessage): Promise<void> {
    // nodemailer loads with the first message, not in every process that builds the app.
    this.transport ??= (await import('nodemailer')).createTransport(this.url)
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text, ...(message.html ? { html: message.html } : {}) })
  }

  async close(): Promise<void> {
    this.transport?.close()
  }
}

export function createMailer(config: { SMTP_URL: string; MAIL_FROM: string }, log: FastifyBaseLogger): Mailer {
  return config.SMTP_URL ? new SmtpMailer(config.SMTP_URL, config.MAIL_FROM) : new LogMailer(log)
}

/**
 * Sends `message` and records it in the outbox as sent or failed. A failure is recorded and
 * rethrown; its text comes from the relay, never from the message.
 */
export async function sendMail(db: DbOrTx, mailer: Mailer, kind: string, message: MailMessage, clock: Clock): Promise<void> {
  const id = randomUUID()
  await db
    .insertInto('mail_outbox')
    .values({
      id,
      kind,
      recipient: message.to,
      subject: message.subject,
      status: 'pending',
      error: null,
      created_at: clock.now().toISOString(),
      sent_at: null
    })
    .execute()
  try {
    await mailer.send(message)
  } catch (err) {
    const reason = err instanceof Error ? err.message.slice(0, 500) : 'unknown error'
    await db.updateTable('mail_outbox').set({ status: 'failed', error: reason }).where('id', '=', id).execute()
    throw new Error(`mail ${id} (${kind}) was not sent: ${reason}`)
  }
  await db.updateTable('mail_outbox').set({ status: 'sent', sent_at: clock.now().toISOString() }).where('id', '=', id).execute()
}
