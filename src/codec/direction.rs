//! Which way a frame goes.

/// Which way a frame goes: a request (client to broker) or a response (broker to client).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// A request: from a client to a broker.
    Request,
    /// A response: from a broker to a client.
    Response,
}

impl Direction {
    /// `"request"` or `"response"`, as logs and JSON name the direction.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Request => "request",
            Direction::Response => "response",
        }
    }
}
