// The court page's script (GET /r/{courtSlug}): sign in or go on as a guest, tap for the last seconds,
// follow the replay to a playing video, list "My replays". Plain browser JavaScript, no framework and
// no build step: the server serves this file as it is, under a name that changes with its content.
// Nothing here talks to another origin; the page's settings and strings come inline in the HTML.
'use strict'
;(function () {
  var cfg = JSON.parse(document.getElementById('config').textContent)
  var S = cfg.strings
  var API = '/apis/v2'
  var AUTH = 'club.replays.auth' // sessionStorage: a member's tokens live as long as the tab
  var GUEST = 'club.replays.guest' // localStorage: a guest's replays stay on this phone
  var PENDING = 'club.replays.pending' // localStorage: taps not yet answered survive a reload
  var POLL_MS = 1000
  var MAX_AGE_MINUTES = Math.floor(cfg.maxAgeSeconds / 60)

  function $(id) {
    return document.getElementById(id)
  }
  function t(key, vars) {
    var s = S[key] == null ? key : S[key]
    return s.replace(/\{(\w+)\}/g, function (_, k) {
      return vars && vars[k] != null ? String(vars[k]) : ''
    })
  }
  function read(store, key) {
    try {
      return JSON.parse(store.getItem(key) || 'null')
    } catch (e) {
      return null
    }
  }
  function write(store, key, value) {
    if (value == null) store.removeItem(key)
    else store.setItem(key, JSON.stringify(value))
  }
  function clock(ms) {
    return new Date(ms).toLocaleTimeString(cfg.lang, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
  }

  // The phone's clock against the server's: the server wrote its time into the page as it answered;
  // the phone's time then is the middle of the request's round trip (in the phone's Date.now terms,
  // so a phone set minutes wrong still asks for the right moment).
  var offset = (function () {
    var nav = performance.getEntriesByType && performance.getEntriesByType('navigation')[0]
    if (!nav || !nav.responseStart) return 0
    var phoneAt = Date.now() - performance.now() + (nav.requestStart + nav.responseStart) / 2
    return cfg.serverNow - phoneAt
  })()

  // Credentials: a member's tokens in memory and sessionStorage (never in a URL), a guest's token in
  // localStorage when the club lets guests in.
  var auth = read(sessionStorage, AUTH)
  // A guest session is bound to the court whose page made it: another court's page makes its own.
  var guest = cfg.guests ? read(localStorage, GUEST) : null
  if (guest && guest.court !== cfg.court.id) guest = null

  function NetworkError() {}
  function NeedSignIn() {}

  function send(method, path, options) {
    options = options || {}
    var headers = options.headers || {}
    if (options.json !== undefined) headers['content-type'] = 'application/json'
    return fetch(path, {
      method: method,
      headers: headers,
      body: options.json !== undefined ? JSON.stringify(options.json) : options.body,
      cache: 'no-store',
      credentials: 'omit'
    }).catch(function () {
      throw new NetworkError()
    })
  }

  function tokenRequest(params) {
    return send('POST', API + '/oauth2/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString()
    })
  }

  function keepTokens(answer) {
    auth = { access: answer.access_token, refresh: answer.refresh_token, expiresAt: Date.now() + answer.expires_in * 1000 }
    write(sessionStorage, AUTH, auth)
  }

  function refresh() {
    if (!auth || !auth.refresh) return Promise.resolve(false)
    return tokenRequest({ grant_type: 'refresh_token', refresh_token: auth.refresh }).then(function (res) {
      if (!res.ok) {
        forget()
        return false
      }
      return res.json().then(function (answer) {
        keepTokens(answer)
        return true
      })
    })
  }

  function credential() {
    if (auth) {
      if (auth.expiresAt - Date.now() < 30000) {
        return refresh().then(function (ok) {
          if (!ok) throw new NeedSignIn()
          return auth.access
        })
      }
      return Promise.resolve(auth.access)
    }
    if (!cfg.guests) return Promise.reject(new NeedSignIn())
    if (guest && Date.parse(guest.expiresAt) > Date.now() + offset) return Promise.resolve(guest.token)
    return send('POST', API + '/replays/guest-sessions', { json: { court: { id: cfg.court.id } } }).then(function (res) {
      if (!res.ok) return failure(res).then(function (err) {
        throw err
      })
      return res.json().then(function (answer) {
        guest = { token: answer.token, expiresAt: answer.expiresAt, court: cfg.court.id }
        write(localStorage, GUEST, guest)
        return guest.token
      })
    })
  }

  // One API call with the current credential; a 401 refreshes (a member) or starts over (a guest) once.
  function api(method, path, json, retried) {
    return credential().then(function (token) {
      return send(method, API + path, { headers: { authorization: 'Bearer ' + token }, json: json }).then(function (res) {
        if (res.status !== 401 || retried) return res
        if (auth) {
          return refresh().then(function (ok) {
            if (!ok) throw new NeedSignIn()
            return api(method, path, json, true)
          })
        }
        if (cfg.guests) {
          guest = null
          write(localStorage, GUEST, null)
          return api(method, path, json, true)
        }
        throw new NeedSignIn()
      })
    })
  }

  // An error answer in words: the platform's {statusCode, message, error} read for the player.
  function failure(res) {
    return res
      .json()
      .catch(function () {
        return {}
      })
      .then(function (body) {
        var err = new Error(body.message || res.statusText)
        err.status = res.status
        return err
      })
  }

  function showError(err) {
    var box = $('notice')
    box.textContent = ''
    if (err.status === 402) {
      box.append(t('error.noItem'))
      if (cfg.shopUrl) {
        var a = document.createElement('a')
        a.href = cfg.shopUrl
        a.textContent = t('error.buy')
        a.id = 'shop'
        box.append(' ', a)
      }
    } else if (err.status === 429) {
      box.textContent = t('error.tooMany')
    } else {
      box.textContent = t('error.other', { message: err.message })
    }
    box.dataset.kind = 'error'
  }

  function notice(text, kind) {
    var box = $('notice')
    box.textContent = text
    box.dataset.kind = kind || ''
  }

  // Views: the sign-in form when an account is needed, the buttons otherwise.
  function render() {
    var signedIn = !!auth
    var wantsSignIn = !signedIn && (!cfg.guests || showingSignIn)
    $('signin').hidden = !wantsSignIn
    $('taps').hidden = wantsSignIn
    $('signout').hidden = !signedIn
    $('show-signin').hidden = signedIn || !cfg.guests || wantsSignIn
    $('who').textContent = signedIn ? t('signin.signedInAs') : cfg.guests && !wantsSignIn ? t('signin.guest') : ''
    document.body.dataset.view = wantsSignIn ? 'signin' : signedIn ? 'member' : 'guest'
  }
  var showingSignIn = false

  // The tokens gone from this tab (a refresh token the server refused needs nothing more).
  function forget() {
    auth = null
    write(sessionStorage, AUTH, null)
    render()
  }

  // Signing out ends the login on the server too, as the console does, so a copy of the refresh
  // token left behind (a shared phone's session restore) is worth nothing. The tab forgets the
  // tokens whatever the server answers.
  function signOut() {
    var refreshToken = auth && auth.refresh
    forget()
    if (!refreshToken) return
    send('POST', API + '/oauth2/revoke', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }).toString()
    }).catch(function () {})
  }

  $('signin-form').addEventListener('submit', function (event) {
    event.preventDefault()
    var form = event.target
    var button = form.querySelector('button')
    button.disabled = true
    button.textContent = t('signin.busy')
    $('signin-error').textContent = ''
    tokenRequest({ grant_type: 'password', username: form.email.value, password: form.password.value })
      .then(function (res) {
        if (!res.ok) {
          $('signin-error').textContent = res.status === 400 || res.status === 401 ? t('signin.failed') : t('error.other', { message: res.status })
          return
        }
        return res.json().then(function (answer) {
          keepTokens(answer)
          form.password.value = ''
          showingSignIn = false
          render()
          loadMine()
          flush()
        })
      })
      .catch(function () {
        $('signin-error').textContent = t('offline.waiting', { time: clock(Date.now()), minutes: MAX_AGE_MINUTES })
      })
      .then(function () {
        button.disabled = false
        button.textContent = t('signin.submit')
      })
  })
  $('signout').addEventListener('click', function () {
    $('mine').textContent = ''
    signOut()
  })
  $('show-signin').addEventListener('click', function () {
    showingSignIn = true
    render()
  })

  // A tap is kept (with the moment it was made, on the server's clock) until the server has it.
  function pending() {
    return read(localStorage, PENDING) || []
  }
  function tap(seconds) {
    var at = Date.now()
    var list = pending()
    list.push({ key: at + '-' + Math.random().toString(36).slice(2), court: cfg.court.id, seconds: seconds, tapAt: at, end: new Date(at + offset).toISOString() })
    write(localStorage, PENDING, list)
    flush()
  }
  function forgetTap(key) {
    write(
      localStorage,
      PENDING,
      pending().filter(function (p) {
        return p.key !== key
      })
    )
  }
  var flushing = false
  function flush() {
    if (flushing) return
    var next = pending()[0]
    if (!next) return
    // A member or guest may ask only for the last REPLAY_MAX_AGE_SECONDS (on the server's clock): a tap
    // kept offline longer is not sent, and the player is told why in words.
    if (Date.now() + offset - Date.parse(next.end) > cfg.maxAgeSeconds * 1000) {
      forgetTap(next.key)
      notice(t('offline.tooOld', { time: clock(next.tapAt), minutes: MAX_AGE_MINUTES }), 'error')
      return flush()
    }
    flushing = true
    notice(t('sending'))
    api('POST', '/replays', { court: { id: next.court }, seconds: next.seconds, end: next.end })
      .then(function (res) {
        // Only an answer about the tap itself ends its wait: a 2xx, or a 4xx said in words below. A
        // 5xx is the server's trouble, not the tap's: it stays and is sent again.
        if (res.status >= 500) {
          return failure(res).then(function (err) {
            throw err
          })
        }
        forgetTap(next.key)
        if (res.status === 201) {
          notice('')
          return res.json().then(follow)
        }
        return failure(res).then(showError)
      })
      .then(
        function () {
          flushing = false
          flush()
        },
        function (err) {
          flushing = false
          if (err instanceof NetworkError) {
            notice(t('offline.waiting', { time: clock(next.tapAt), minutes: MAX_AGE_MINUTES }), 'offline')
          } else if (err && err.status >= 500) {
            notice(t('server.retrying', { time: clock(next.tapAt), status: err.status }), 'retrying')
          } else if (err instanceof NeedSignIn) {
            notice('')
            forget()
          } else if (err && err.status) {
            showError(err)
          } else {
            notice(t('error.other', { message: String(err && err.message) }), 'error')
          }
        }
      )
  }
  window.addEventListener('online', flush)
  // Some phones miss the online event, and a server in trouble needs a moment: look again now and
  // then while a tap waits.
  setInterval(flush, 5000)

  // The replay being made: its steps, then the video or the reason in words.
  var STEPS = ['REQUESTED', 'EXPORTING', 'UPLOADING', 'READY']
  var following = null
  function follow(replay) {
    following = replay.id
    show(replay)
    poll(replay.id)
  }
  function poll(id) {
    if (following !== id) return
    api('GET', '/replays/' + encodeURIComponent(id))
      .then(function (res) {
        if (!res.ok) return failure(res).then(showError)
        return res.json().then(function (replay) {
          if (following !== id) return
          show(replay)
          if (STEPS.indexOf(replay.status) >= 0 && replay.status !== 'READY') setTimeout(poll, POLL_MS, id)
          else loadMine()
        })
      })
      .catch(function () {
        // No network for a moment: keep asking.
        setTimeout(poll, POLL_MS * 2, id)
      })
  }
  function show(replay) {
    var card = $('current')
    card.hidden = false
    card.dataset.id = replay.id
    card.dataset.status = replay.status
    var at = STEPS.indexOf(replay.status)
    var items = $('steps').children
    for (var i = 0; i < items.length; i++) {
      items[i].className = replay.status === 'READY' || i < at ? 'done' : i === at ? 'active' : ''
    }
    $('state').textContent = t('status.' + replay.status)
    var message = ''
    if (replay.status === 'FAILED') {
      var reason = replay.reason || 'other'
      message = S['reason.' + reason] ? t('reason.' + reason) : t('reason.other', { reason: reason })
      if (cfg.requirePackage && auth) message += ' ' + t('failed.itemBack')
    }
    $('message').textContent = message
    var ready = replay.status === 'READY' && replay.downloadUrl
    var video = $('player')
    video.hidden = !ready
    $('actions').hidden = !ready
    if (ready && video.dataset.id !== replay.id) {
      video.dataset.id = replay.id
      video.src = replay.downloadUrl
      $('download').href = replay.downloadUrl
      $('download').setAttribute('download', cfg.court.slug + '-' + replay.end.replace(/[:.]/g, '-') + '.mp4')
    }
  }
  $('share').addEventListener('click', function () {
    var url = $('download').href
    if (navigator.share) {
      navigator.share({ title: cfg.court.name, url: url }).catch(function () {})
      return
    }
    var copied = function () {
      notice(t('ready.copied'))
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(url).then(copied, function () {
        notice(url)
      })
    } else {
      notice(url)
    }
  })

  // "My replays": this member's, or the ones made on this phone, newest first.
  function loadMine() {
    if (!auth && !guest) return
    api('GET', '/replays?ipp=20')
      .then(function (res) {
        if (!res.ok) return
        return res.json().then(function (page) {
          var list = $('mine')
          list.textContent = ''
          if (!page.items.length) {
            var empty = document.createElement('li')
            empty.className = 'muted'
            empty.textContent = t('mine.empty')
            list.append(empty)
          }
          page.items.forEach(function (replay) {
            var li = document.createElement('li')
            li.dataset.id = replay.id
            li.dataset.status = replay.status
            var label = document.createElement('span')
            var seconds = Math.round((Date.parse(replay.end) - Date.parse(replay.start)) / 1000)
            label.textContent = t('mine.item', { seconds: seconds, time: clock(Date.parse(replay.end) - offset) })
            li.append(label)
            if (replay.status === 'READY') {
              var play = document.createElement('button')
              play.type = 'button'
              play.textContent = t('mine.play')
              play.addEventListener('click', function () {
                following = replay.id
                show(replay)
                $('current').scrollIntoView({ behavior: 'smooth' })
              })
              li.append(play)
            } else {
              var state = document.createElement('span')
              state.className = 'muted'
              state.textContent = t('status.' + replay.status)
              li.append(state)
            }
            list.append(li)
          })
        })
      })
      .catch(function () {})
  }

  var buttons = document.querySelectorAll('button.tap')
  for (var i = 0; i < buttons.length; i++) {
    buttons[i].addEventListener('click', function (event) {
      tap(Number(event.currentTarget.dataset.seconds))
    })
  }
  render()
  loadMine()
  flush()
  document.body.dataset.ready = 'true'
})()
