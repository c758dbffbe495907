//! Every 2026-07-28 example fixture deserializes into the Rust type of its schema name and
//! serializes back to the identical JSON value.

// Test helpers outside `#[test]` functions may panic too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/2026-07-28/examples")
}

fn read(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Deserializes the fixture as `T`, re-serializes it, and compares.
fn check<T: Serialize + DeserializeOwned>(path: &Path) -> T {
    let original = read(path);
    let typed: T = serde_json::from_value(original.clone()).unwrap_or_else(|e| {
        panic!("{} does not decode as {}: {e}", path.display(), std::any::type_name::<T>())
    });
    let again = serde_json::to_value(&typed).unwrap();
    assert_eq!(again, original, "{} does not round-trip", path.display());
    typed
}

fn check_error_object(path: &Path, code: ErrorCode) {
    let e: ErrorObject = check(path);
    assert_eq!(e.code, code, "{}", path.display());
}

fn check_error_response(path: &Path, code: ErrorCode) -> ErrorObject {
    let e: ErrorResponseMessage = check(path);
    assert_eq!(e.error.code, code, "{}", path.display());
    e.error
}

macro_rules! dispatch {
    ($folder:expr, $path:expr, [$($name:ident),+ $(,)?], {$($alias:literal => $ty:ty),+ $(,)?}) => {
        match $folder {
            $(stringify!($name) => {
                check::<$name>($path);
            })+
            $($alias => {
                check::<$ty>($path);
            })+
            "ParseError" => check_error_object($path, ErrorCode::PARSE_ERROR),
            "InternalError" => check_error_object($path, ErrorCode::INTERNAL_ERROR),
            "InvalidParamsError" => check_error_object($path, ErrorCode::INVALID_PARAMS),
            "MethodNotFoundError" => check_error_object($path, ErrorCode::METHOD_NOT_FOUND),
            "HeaderMismatchError" => {
                check_error_response($path, ErrorCode::HEADER_MISMATCH);
            }
            "UnsupportedProtocolVersionError" => {
                let e = check_error_response($path, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
                let data = UnsupportedProtocolVersionData::from_error(&e).unwrap();
                assert!(!data.supported.is_empty());
                assert_eq!(data.requested, "1900-01-01");
            }
            "MissingRequiredClientCapabilityError" => {
                let e = check_error_response(
                    $path,
                    ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                );
                let data = MissingRequiredClientCapabilityData::from_error(&e).unwrap();
                assert!(data.required_capabilities.elicitation.is_some());
            }
            other => panic!("no Rust type mapped for schema type {other}"),
        }
    };
}

fn check_file(folder: &str, path: &Path) {
    dispatch!(folder, path, [
        AudioContent, BlobResourceContents, BooleanSchema, CallToolRequest,
        CallToolRequestParams, CallToolResult, CallToolResultResponse, CancelledNotification,
        CancelledNotificationParams, ClientCapabilities, CompleteRequest, CompleteRequestParams,
        CompleteResult, CompleteResultResponse, CreateMessageRequestParams, CreateMessageResult,
        DiscoverRequest, DiscoverResult, DiscoverResultResponse, ElicitRequestFormParams,
        ElicitRequestURLParams, ElicitResult, EmbeddedResource, GetPromptRequest,
        GetPromptRequestParams, GetPromptResult, GetPromptResultResponse, ImageContent,
        InputRequests, InputRequiredResult, InputResponses, ListPromptsRequest,
        ListPromptsResult, ListPromptsResultResponse, ListResourceTemplatesRequest,
        ListResourceTemplatesResult, ListResourceTemplatesResultResponse, ListResourcesRequest,
        ListResourcesResult, ListResourcesResultResponse, ListRootsResult, ListToolsRequest,
        ListToolsResult, ListToolsResultResponse, LoggingMessageNotification,
        LoggingMessageNotificationParams, ModelPreferences, NumberSchema, PaginatedRequestParams,
        ProgressNotification, ProgressNotificationParams, PromptListChangedNotification,
        ReadResourceRequest, ReadResourceResult, ReadResourceResultResponse, Resource,
        ResourceLink, ResourceListChangedNotification, ResourceUpdatedNotification,
        ResourceUpdatedNotificationParams, Root, SamplingMessage, ServerCapabilities,
        StringSchema, SubscriptionsAcknowledgedNotification, SubscriptionsListenRequest,
        SubscriptionsListenResult, SubscriptionsListenResultResponse, TextContent,
        TextResourceContents, TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, Tool,
        ToolListChangedNotification, ToolResultContent, ToolUseContent,
        UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
    ], {
        // In 2026-07-28 these three are input requests embedded in an `input_required`
        // result (`{method, params}`), not JSON-RPC requests.
        "CreateMessageRequest" => SamplingInputRequest,
        "ElicitRequest" => ElicitInputRequest,
        "ListRootsRequest" => ListRootsInputRequest,
    });
}

#[test]
fn every_example_round_trips() {
    let mut folders: Vec<_> =
        fs::read_dir(examples_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    folders.sort();
    let mut files = 0;
    for folder in &folders {
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        let mut entries: Vec<_> =
            fs::read_dir(folder).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            check_file(&name, &path);
            files += 1;
        }
    }
    assert_eq!(folders.len(), 88, "schema type folders");
    assert_eq!(files, 129, "example files");
}

#[test]
fn examples_decode_into_the_expected_variants() {
    let dir = examples_dir();
    let r: CallToolResultResponse =
        check(&dir.join("CallToolResultResponse/call-tool-result-response.json"));
    assert!(matches!(r.result, Outcome::Complete(_)));
    let r: InputRequiredResult = check(&dir.join(
        "InputRequiredResult/input-required-result-with-elicitation-and-sampling-and-request-state.json",
    ));
    let requests = r.input_requests.unwrap();
    assert!(matches!(requests["github_login"], InputRequest::Elicit(_)));
    assert!(matches!(requests["capital_of_france"], InputRequest::CreateMessage(_)));
    let r: InputResponses =
        check(&dir.join("InputResponses/elicitation-and-sampling-input-responses.json"));
    assert!(matches!(r["github_login"], InputResponse::Elicit(_)));
    assert!(matches!(r["capital_of_france"], InputResponse::CreateMessage(_)));
    let r: DiscoverResult = check(&dir.join("DiscoverResult/server-capabilities-discovery.json"));
    assert_eq!(r.cache_scope, Some(CacheScope::Public));
    assert_eq!(r.meta.unwrap().server_info().unwrap().unwrap().name, "ExampleServer");
    let r: DiscoverRequest = check(&dir.join("DiscoverRequest/server-discover-request.json"));
    let meta = r.params.meta.unwrap();
    assert_eq!(meta.protocol_version(), Some("2026-07-28"));
    assert_eq!(meta.client_capabilities().unwrap(), Some(ClientCapabilities::default()));
}
