//! SASL/PLAIN: SaslHandshake and SaslAuthenticate.

use super::*;

impl Handler<'_> {
    pub(super) fn sasl_handshake(
        &mut self,
        reply: ReplyTo,
        h: crate::messages::SaslHandshakeRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        let v = reply.api_version;
        use crate::messages::sasl_handshake::SaslHandshakeResponse;
        let accepted = h.mechanism() == "PLAIN";
        self.raw_sasl = accepted && v == 0;
        let mechanisms = ["PLAIN".into()];
        let code = if accepted { 0 } else { ErrorCode::UnsupportedSaslMechanism.to_i16() };
        let body = SaslHandshakeResponse { error_code: code, mechanisms: (&mechanisms).into() };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }

    pub(super) fn sasl_authenticate(
        &mut self,
        reply: ReplyTo,
        a: crate::messages::SaslAuthenticateRequestView<'_>,
        out: &mut Outbox,
    ) -> Result<(), ConnError> {
        use crate::messages::sasl_authenticate::SaslAuthenticateResponse;
        let body = if self.shared.plain_ok(a.auth_bytes()) {
            SaslAuthenticateResponse::default()
        } else {
            SaslAuthenticateResponse {
                error_code: ErrorCode::SaslAuthenticationFailed.to_i16(),
                error_message: Some("Authentication failed: invalid username or password".into()),
                ..Default::default()
            }
        };
        ServerConn::encode_response(reply, &body, out)?;
        Ok(())
    }
}
